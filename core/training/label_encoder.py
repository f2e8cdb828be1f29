"""The non-siamese label encoder: a second encoder for the anchors (intent descriptions or names).

``papers/non-siamese-biencoders.txt``: with one (siamese) encoder for utterances and intent
labels, an utterance that contains a word of a competing intent's name is pulled towards that
name; giving the labels their own weights (``∂Φt = BackProp(x)``, ``∂Φl = BackProp(y)``) helps
most on such *borderline* utterances (BANKING77 69.3 → 75.3, CLINC150 72.9 → 76.5), and a
smaller label encoder (*heterogeneous*) keeps the accuracy at a fraction of the memory. Their
best recipe: a contrastive loss on positive pairs only, i.e. in-batch negatives.

Here (``TrainConfig(label_encoder="separate", anchor_pairs=True)``) the label encoder starts as a
copy of the utterance encoder (optionally cut to its lowest ``label_layers`` layers) and trains in
the same loop: every batch of the fast method is class-disjoint, so each of its utterances is
paired with its own intent's anchor, embedded by the label encoder, and the other anchors of the
batch are true negatives (:class:`LabelEncoderLoss`). The (utterance, utterance) loss trains the
utterance encoder as before; the (utterance, anchor) loss trains both.

Measured (``bench/descriptions.py``, MiniLM, seed 0, one pass of the fast method, humanised
names as anchors): scored by the anchors alone (the paper's bi-encoder), separate beats shared
on BANKING77 76.4 vs 70.7 % (borderline 47.3 vs 36.5) and CLINC150 83.4 vs 76.0 % (borderline
68.2 vs 48.9); with one example per intent in the pool and anchor weight 1, -1.5 / +1.2 points;
with 10 examples, -0.6 / -0.7 (examples decide there). A 2-layer label encoder (``label_layers=2``,
a cut MiniLM rather than the paper's distilled TinyBERT) lost the gain (69.2 % by anchors alone).
These runs trained every layer; with the fast default's 3 frozen layers a 2-layer label encoder
needs ``freeze_layers`` of 1 or 0.

Example:
    >>> label_column([("card_lost",), ("greet",)], {"greet": "saying hello"})
    ['', 'saying hello']
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from core.evaluation.scope import in_scope_labels
from core.training.loop import embed_unpadded

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

logger = logging.getLogger(__name__)


def label_column(labels: list[tuple[str, ...]], anchors: Mapping[str, str]) -> list[str]:
    """Per utterance, the anchor of its first intent that has one (``""``: none): the column the
    label encoder embeds, aligned with the utterances of a batch."""
    out = []
    for lab in labels:
        text = next((anchors[n] for n in in_scope_labels(lab) if anchors.get(n, "").strip()), "")
        out.append(text.strip())
    return out


def make_label_model(model: SentenceTransformer, layers: int | None) -> SentenceTransformer:
    """The label encoder's starting point: a copy of ``model`` (same weights, same frozen parts,
    same projection), cut to its ``layers`` lowest transformer layers when given."""
    label = copy.deepcopy(model)
    if layers is not None:
        transformer: Any = label[0].model
        stack = transformer.encoder.layer
        if layers < len(stack):
            transformer.encoder.layer = nn.ModuleList(list(stack)[:layers])
            transformer.config.num_hidden_layers = layers
            logger.info("label encoder: %d of %d transformer layers", layers, len(stack))
    return label


class LabelEncoderLoss(nn.Module):
    """A batch's last column holds, for each utterance of its first column, the anchor of that
    utterance's intent (``""``: none). The other columns are embedded by the utterance model and
    scored by ``base`` as before; the anchors are embedded by ``label_model`` and ranked against
    their utterances with ``ranking`` (an in-batch loss with ``compute_loss_from_embeddings``),
    added with ``weight``. ``label_model`` is a submodule, so the training loop's optimiser
    updates it with the utterance model."""

    def __init__(
        self, base: nn.Module, ranking: nn.Module, label_model: nn.Module, weight: float = 1.0
    ) -> None:
        super().__init__()
        self.base: Any = base
        self.ranking: Any = ranking
        self.label_model = label_model
        self.weight = weight

    def embed_columns(self, model: SentenceTransformer, columns: list[list[str]]) -> list[Any]:
        """Every column but the last through ``model``; then the first column's utterances that
        have an anchor, and those anchors through the label model."""
        *rest, anchors = columns
        embeddings = embed_unpadded(model, rest)
        keep = [i for i, text in enumerate(anchors) if text]
        if len(keep) < 2:  # one anchor has no in-batch negative to be ranked against
            empty = embeddings[0][:0]
            return [*embeddings, empty, empty]
        label_model: Any = self.label_model
        (anchor_vecs,) = embed_unpadded(label_model, [[anchors[i] for i in keep]])
        index = torch.tensor(keep, device=embeddings[0].device)
        return [*embeddings, embeddings[0][index], anchor_vecs]

    def compute_loss_from_embeddings(
        self, embeddings: list[torch.Tensor], labels: torch.Tensor
    ) -> torch.Tensor:
        main: torch.Tensor = self.base.compute_loss_from_embeddings(embeddings[:-2], labels)
        utterances, anchors = embeddings[-2:]
        if len(utterances) < 2:
            return main
        paired: torch.Tensor = self.ranking.compute_loss_from_embeddings(
            [utterances, anchors], labels
        )
        return main + self.weight * paired
