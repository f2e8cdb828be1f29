"""Loss modules for specialisation, all sentence-transformers losses with one ``forward``.

``forward(sentence_features, labels) -> Tensor`` is the shared signature: ``sentence_features`` is a
list of tokenised columns (anchor, positive) and ``labels`` a tensor (ignored by in-batch losses).
Targets per loss:

- ``ocl``: online contrastive (Hadsell), cosine distance, margin; labels 1 / 0.
- ``cos``: MSE between cosine and a target: 0.8 for positives, 0.3 for negatives (ConvFiT).
- ``smax``: softmax over W·(u ⊕ v ⊕ |u−v|), two classes.
- ``mnrl``: in-batch multiple-negatives ranking (InfoNCE), in both directions.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import torch
from torch import nn

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

logger = logging.getLogger(__name__)

COS_TARGETS = (0.3, 0.8)  # (negative, positive) cosine targets of ConvFiT's COS loss


def build_loss(
    model: SentenceTransformer,
    name: str,
    *,
    margin: float = 0.5,
    scale: float = 20.0,
) -> nn.Module:
    """Instantiate the sentence-transformers loss called ``name`` for ``model``.

    Args:
        model: the model being trained (losses embed through it).
        name: ``"ocl"``, ``"cos"``, ``"smax"`` or ``"mnrl"``.
        margin: OCL margin on the cosine distance.
        scale: MNRL similarity scale (1 / temperature). MNRL runs in both directions
            (anchor→positive and positive→anchor): one direction tied on BANKING77 and CLINC150
            (bench/RESULTS.md, issue 46).

    Raises:
        ValueError: for an unknown loss name.
    """
    from sentence_transformers.sentence_transformer import losses

    if name == "ocl":
        return losses.OnlineContrastiveLoss(
            model, distance_metric=losses.SiameseDistanceMetric.COSINE_DISTANCE, margin=margin
        )
    if name == "cos":
        return losses.CosineSimilarityLoss(model)
    if name == "smax":
        dim = model.get_embedding_dimension()
        if dim is None:
            raise ValueError("The model does not report its embedding dimension.")
        return losses.SoftmaxLoss(model, embedding_dimension=int(dim), num_labels=2)
    if name == "mnrl":
        directions = ("query_to_doc", "doc_to_query")
        return losses.MultipleNegativesRankingLoss(model, scale=scale, directions=directions)  # type: ignore[arg-type]
    raise ValueError(f"Unknown loss {name!r}: use one of ocl, cos, smax, mnrl.")


def pair_targets(name: str, labels: list[int], device: torch.device | str) -> torch.Tensor:
    """The label tensor a pair loss expects for binary pair labels (1 = same intent)."""
    if name == "cos":
        neg, pos = COS_TARGETS
        return torch.tensor([pos if y else neg for y in labels], dtype=torch.float, device=device)
    if name == "smax":
        return torch.tensor(labels, dtype=torch.long, device=device)
    return torch.tensor(labels, dtype=torch.float, device=device)
