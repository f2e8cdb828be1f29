"""The int8 encoder live: exported with each trained version, served when it passed parity.

After a retrain has evaluated its new encoder, :func:`export_version_int8` writes an int8 ONNX copy
of it into the version's artifact (``onnx/``) with the parity check run on the version's own
utterances (the `test` split against the `train` pool; without a test split, a held-out fifth of
the pool), the int8 model encoding the pool as well as the queries, as the live app does. The
result goes into the version's metrics under ``int8``.

Which encoder then serves is the rule of :mod:`app.serving.int8` (the copy when it passed parity
and the project allows it). A version records the measurement of the encoder that serves (issue
46): when its int8 copy passed, the retrain evaluates that copy too, its numbers are the headline
and the gate's, and the fp32 encoder's stand beside them, labelled
(:func:`app.serving.int8.served_metrics` picks the one the project's setting serves).
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from core.errors import logged
from core.evaluation import EvalData

logger = logging.getLogger(__name__)

MIN_AGREEMENT = 0.99
# Questions the parity check compares at most (a seeded sample of the test split above it): on
# BANKING77's 3,078 test questions the full check saw 9 disagreements (99.71 %); 1,000 questions
# judge an agreement of 99 % within about 0.3 points and cost a third of the int8 encoding.
PARITY_QUERIES = 1000
# Only recipes faster than fp32 torch are worth serving: block-wise int8 with int8 compute.
# (``blockwise-32-fp32``, the bundle export's fallback, is more faithful but no faster.)
LIVE_VARIANTS: tuple[str, ...] = ("blockwise-32",)
# The reason recorded when the server does not export int8 copies (``INTENT_STUDIO_INT8=off``).
INT8_OFF = "int8 export is off on this server (INTENT_STUDIO_INT8=off)"


def parity_split(
    data: EvalData, limit: int | None = None
) -> tuple[list[str], list[tuple[str, ...]], list[str]]:
    """(pool texts, pool labels, query texts) of the parity check: the `test` split against the
    pool (above ``limit`` questions, a seeded sample of ``limit`` of them, in their order), or
    without one a held-out fifth of the pool against the rest.

    Example:
        >>> d = EvalData(["a", "b", "c", "d", "e", "f"], [("x",)] * 6, [], [])
        >>> parity_split(d)[2]
        ['a', 'f']
        >>> t = EvalData(["a", "b"], [("x",), ("y",)], [f"q{i}" for i in range(9)], [("x",)] * 9)
        >>> parity_split(t, limit=3)[2]
        ['q0', 'q6', 'q8']
    """
    if data.test_texts:
        queries = data.test_texts
        if limit is not None and len(queries) > limit:
            keep = sorted(random.Random(0).sample(range(len(queries)), limit))
            queries = [queries[i] for i in keep]
        return data.train_texts, data.train_labels, queries
    held = {i for i in range(len(data.train_texts)) if i % 5 == 0}
    pool = [i for i in range(len(data.train_texts)) if i not in held]
    return (
        [data.train_texts[i] for i in pool],
        [data.train_labels[i] for i in pool],
        [data.train_texts[i] for i in sorted(held)],
    )


class _Cached:
    """The fp32 side of the parity check through the embedding cache (evaluation has just
    encoded these texts with the same encoder)."""

    def __init__(self, encoder: Any, cached: Callable[[Any, Sequence[str]], np.ndarray]) -> None:
        self._encoder = encoder
        self._cached = cached

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        return self._cached(self._encoder, texts)


def export_version_int8(
    encoder: Any,
    data: EvalData,
    folder: Path,
    *,
    cached: Callable[[Any, Sequence[str]], np.ndarray] | None = None,
    multi_label: bool = False,
    min_agreement: float = MIN_AGREEMENT,
    limit: int | None = PARITY_QUERIES,
) -> dict[str, Any]:
    """Export ``encoder``'s int8 copy into ``folder`` if it passes parity; the metrics to record.

    ``cached`` (the embedding cache's ``encode``) encodes both sides of the check: the fp32
    side finds the evaluation's vectors there, and the int8 copy's vectors of the pool stay
    there for the live pool that will serve them. ``limit``: the questions compared at most
    (:func:`parity_split`).

    Never raises for a failed export: the version then simply serves fp32 (``passed`` False and
    the ``reason``).

    Returns:
        ``{"passed", "agreement", "n", "variant", "size_mb", "reason"}``.
    """
    from core.bundle.onnx import OnnxParityError, export_onnx

    pool_texts, pool_labels, queries = parity_split(data, limit)
    if multi_label:
        return {"passed": False, "reason": "multi-label: the head decides, served in fp32"}
    if len(queries) < 20 or not pool_texts:
        return {
            "passed": False,
            "unchecked": True,
            "reason": f"too few utterances to check parity ({len(queries)})",
        }
    try:
        result = export_onnx(
            encoder,
            folder,
            pool_texts=pool_texts,
            pool_labels=pool_labels,
            eval_texts=queries,
            min_agreement=min_agreement,
            own_pool=True,
            variants=LIVE_VARIANTS,
            reference=_Cached(encoder, cached) if cached is not None else None,
            candidate=(lambda int8: _Cached(int8, cached)) if cached is not None else None,
        )
    except OnnxParityError as exc:
        return {
            "passed": False,
            "agreement": round(exc.agreement, 4),
            "n": len(queries),
            "reason": f"top-1 agreement {exc.agreement:.2%} < {min_agreement:.0%}",
        }
    except Exception as exc:  # onnxruntime missing, an unexportable model: serve fp32
        logged(logger, "int8 export failed: %s", exc, level=logging.WARNING)
        return {"passed": False, "reason": f"export failed: {type(exc).__name__}: {exc}"}
    return {
        "passed": True,
        "agreement": round(result.agreement, 4),
        "n": result.n_eval,
        "variant": result.variant,
        "size_mb": round(result.size_mb, 1),
        "reason": f"top-1 agreement {result.agreement:.2%} on {result.n_eval} utterances",
    }
