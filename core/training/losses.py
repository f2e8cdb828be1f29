"""The training loss: in-batch multiple-negatives ranking (InfoNCE), in both directions.

ConvFiT's pair losses (OCL, COS, SMAX on sampled pairs) lost to it on every seed of BANKING77 and
CLINC150 and left the product (bench/RESULTS.md, issue 46).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from torch import nn

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer


def ranking_loss(model: SentenceTransformer, *, scale: float = 20.0) -> nn.Module:
    """Multiple-negatives ranking over (anchor, positive) columns for ``model``, both ways
    (anchor→positive and positive→anchor: one direction tied on BANKING77 and CLINC150,
    bench/RESULTS.md, issue 46).

    Args:
        model: the model being trained (the loss embeds through it).
        scale: similarity scale (1 / temperature).
    """
    from sentence_transformers.sentence_transformer import losses

    directions = ("query_to_doc", "doc_to_query")
    return losses.MultipleNegativesRankingLoss(model, scale=scale, directions=directions)  # type: ignore[arg-type]
