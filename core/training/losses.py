"""Loss modules for specialisation, all sentence-transformers losses with one ``forward``.

``forward(sentence_features, labels) -> Tensor`` is the shared signature: ``sentence_features`` is a
list of tokenised columns (anchor, positive) and ``labels`` a tensor (ignored by in-batch losses).
Targets per loss:

- ``ocl``: online contrastive (Hadsell), cosine distance, margin; labels 1 / 0.
- ``cos``: MSE between cosine and a target: 0.8 for positives, 0.3 for negatives (ConvFiT).
- ``smax``: softmax over W·(u ⊕ v ⊕ |u−v|), two classes.
- ``mnrl``: in-batch multiple-negatives ranking (InfoNCE), optionally symmetric.

:class:`DistilLoss` wraps an in-batch loss with a distillation term.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import torch
import torch.nn.functional as F
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
    symmetric: bool = False,
) -> nn.Module:
    """Instantiate the sentence-transformers loss called ``name`` for ``model``.

    Args:
        model: the model being trained (losses embed through it).
        name: ``"ocl"``, ``"cos"``, ``"smax"`` or ``"mnrl"``.
        margin: OCL margin on the cosine distance.
        scale: MNRL similarity scale (1 / temperature).
        symmetric: MNRL in both directions.

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
        directions: tuple[str, ...] = ("query_to_doc",)
        if symmetric:
            directions = ("query_to_doc", "doc_to_query")
        return losses.MultipleNegativesRankingLoss(model, scale=scale, directions=directions)  # type: ignore[arg-type]
    raise ValueError(f"Unknown loss {name!r}: use one of ocl, cos, smax, mnrl.")


def similarity_distillation(
    student: torch.Tensor, teacher: torch.Tensor, *, kind: str = "kl", temperature: float = 0.05
) -> torch.Tensor:
    """Relational distillation: how far the student's cosine similarities among ``n`` texts are
    from the teacher's. Only the ``n × n`` similarities are compared, so the two encoders may
    have different dimensions (MiniLM 384, mpnet 768); each text's similarity to itself is left
    out.

    Args:
        student: ``(n, d_s)`` student embeddings (gradients flow through them).
        teacher: ``(n, d_t)`` teacher embeddings of the same texts, in the same order.
        kind: ``"kl"``: per row, KL(teacher ‖ student) between the softmax over the other
            ``n − 1`` similarities at ``temperature`` (CompRess, SEED: the neighbours' ranking
            matters most); ``"mse"``: mean squared difference of the cosines (relational KD).
        temperature: softmax temperature of ``"kl"``.

    Returns:
        A scalar, 0 when the similarity structures agree (and for fewer than 3 texts).

    Example:
        >>> t = torch.tensor([[1.0, 0.0], [0.6, 0.8], [0.0, 1.0]])
        >>> abs(float(similarity_distillation(t * 3, t))) < 1e-6  # only cosines count
        True
    """
    if kind not in ("kl", "mse"):
        raise ValueError(f"Unknown distillation loss {kind!r}: use kl or mse.")
    if student.shape[0] != teacher.shape[0]:
        raise ValueError(f"student and teacher differ in rows ({len(student)} vs {len(teacher)}).")
    n = student.shape[0]
    if n < 3:
        return student.sum() * 0.0
    s, t = F.normalize(student, dim=-1), F.normalize(teacher.to(student), dim=-1)
    off = ~torch.eye(n, dtype=torch.bool, device=s.device)
    s_sim = (s @ s.T)[off].view(n, n - 1)
    t_sim = (t @ t.T)[off].view(n, n - 1)
    if kind == "mse":
        return F.mse_loss(s_sim, t_sim)
    return F.kl_div(
        F.log_softmax(s_sim / temperature, dim=1),
        F.log_softmax(t_sim / temperature, dim=1),
        reduction="batchmean",
        log_target=True,
    )


class DistilLoss(nn.Module):
    """An in-batch loss plus :func:`similarity_distillation` toward a teacher, weighted.

    A batch's last column holds the utterances drawn for distillation (unlabelled ones); the
    columns before it go to ``base``. The distilled texts are the first column's (the anchors)
    followed by the last column's; ``teacher`` gives their teacher vectors in that order, a row
    of NaN where a text has none (it is left out)."""

    def __init__(
        self, base: nn.Module, weight: float, *, kind: str = "kl", temperature: float = 0.05
    ) -> None:
        super().__init__()
        self.base: Any = base  # a loss with compute_loss_from_embeddings
        self.weight, self.kind, self.temperature = weight, kind, temperature

    def compute_loss_from_embeddings(
        self,
        embeddings: list[torch.Tensor],
        labels: torch.Tensor,
        teacher: torch.Tensor | None = None,
    ) -> torch.Tensor:
        main: torch.Tensor = self.base.compute_loss_from_embeddings(embeddings[:-1], labels)
        if teacher is None:
            return main
        student = torch.cat([embeddings[0], embeddings[-1]])
        known = ~torch.isnan(teacher).any(dim=1)
        distil = similarity_distillation(
            student[known], teacher[known], kind=self.kind, temperature=self.temperature
        )
        return main + self.weight * distil


def pair_targets(name: str, labels: list[int], device: torch.device | str) -> torch.Tensor:
    """The label tensor a pair loss expects for binary pair labels (1 = same intent)."""
    if name == "cos":
        neg, pos = COS_TARGETS
        return torch.tensor([pos if y else neg for y in labels], dtype=torch.float, device=device)
    if name == "smax":
        return torch.tensor(labels, dtype=torch.long, device=device)
    return torch.tensor(labels, dtype=torch.float, device=device)
