"""Merge and split what-ifs in the active model's space: the estimate of :mod:`core.design.whatif`
(k-NN predictions before and after renaming, no retraining). A merge is scored on the test split
when there is one, by the very evaluation behind the Evaluation view's confusion matrix
(:func:`app.services.models.evaluation.evaluate_version` on :func:`~app.services.models.evaluation.evaluation_inputs`),
so the confusions it says the merge removes are that matrix's cells; without test rows, and for a
split (its parts exist only in `train`), out of fold over the labelled `train` pool.
Single-label projects only: a multi-label project's decisions come from its head, which this
estimate does not model.

Example:
    >>> merge(serving_state, "demo", "cancel_order", "refund_status").summary()  # doctest: +SKIP
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from app.access import ProjectHandle
from app.services.models import evaluation as eval_svc
from app.serving.factories import FactoryBuilder
from core.design.whatif import WhatIf, merge_estimate, merge_labels, merge_whatif, split_whatif
from core.evaluation import EvalData
from core.multilabel.rule import is_multilabel
from core.retrieval.factory import Anchors, PredictorFactory
from storage.utterances import labelled_pool

EXAMPLES = 3


@dataclass(frozen=True)
class Estimate:
    """A what-if and, for a split, the central example texts of each proposed part."""

    whatif: WhatIf
    examples: dict[str, list[str]] = field(default_factory=dict)


def _pool(
    factories: FactoryBuilder, p: ProjectHandle
) -> tuple[np.ndarray, list[tuple[str, ...]], list[str]]:
    with factories.db.session() as s:
        pid = p.id
        rows = labelled_pool(s, pid)
    labels = [r.labels for r in rows]
    if not rows:
        raise ValueError("No labelled training utterances yet: label a few in the Data tab.")
    if is_multilabel(labels):
        raise ValueError(
            "This is a multi-label project: its classifier head decides, and a merge or split "
            "what-if estimates the single-label nearest-example rule, so it would mislead here. "
            "Merge or split in the Data tab and retrain to see the effect."
        )
    encoder, _ = factories.active_encoder(pid)
    texts = [r.text for r in rows]
    return factories.cache.encode(encoder, texts), labels, texts


def merge(factories: FactoryBuilder, p: ProjectHandle, a: str | None, b: str | None) -> Estimate:
    """What merging intents ``a`` and ``b`` would do to accuracy and confusion: on the test
    split when there is one (the predictions of the Evaluation's confusion matrix), else out of
    fold over the `train` pool.

    Raises:
        ValueError: a missing or repeated intent, a multi-label project, too few examples.
    """
    if not a or not b:
        raise ValueError("Pick two intents to merge.")
    if a == b:
        raise ValueError(f"Pick two different intents to merge (both are {a!r}).")
    factory, _, data, multi = eval_svc.evaluation_inputs(factories, p)
    if not data.test_texts or multi:
        vectors, labels, _ = _pool(factories, p)
        return Estimate(merge_whatif(vectors, labels, a, b))
    known = {name for labels in data.train_labels for name in labels}
    for name in (a, b):
        if name not in known:
            raise ValueError(f"No labelled examples of intent {name!r}: pick one that has some.")
    merged = EvalData(
        data.train_texts,
        merge_labels(data.train_labels, a, b),
        data.test_texts,
        merge_labels(data.test_labels, a, b),
    )
    before, _ = eval_svc.evaluate_version(factory, data, factories.cache)
    after, _ = eval_svc.evaluate_version(_merged_anchors(factory, a, b), merged, factories.cache)
    return Estimate(merge_estimate(a, b, before, after))


def _merged_anchors(factory: PredictorFactory, a: str, b: str) -> PredictorFactory:
    """``factory`` after merging ``a`` and ``b``: their anchors leave (a merged intent has no
    description yet; left in, they would name intents that no longer have examples)."""
    anchors = factory.anchors
    if anchors is None or not anchors.on:
        return factory
    names = list(anchors.texts)
    keep = [i for i, n in enumerate(names) if n not in (a, b)]
    vectors = anchors.vectors[keep] if anchors.vectors is not None else None
    texts = {names[i]: anchors.texts[names[i]] for i in keep}
    return factory.replace(anchors=Anchors(texts, anchors.weight, vectors))


def split(
    factories: FactoryBuilder, p: ProjectHandle, intent: str | None, parts: int | None = None
) -> Estimate:
    """Proposed parts of ``intent`` and what splitting it into them would do.

    Raises:
        ValueError: no intent, a multi-label project, an intent with too few examples.
    """
    if not intent:
        raise ValueError("Pick the intent to split.")
    vectors, labels, texts = _pool(factories, p)
    w = split_whatif(vectors, labels, texts, intent, parts=parts)
    return Estimate(w, {p.name: [texts[i] for i in p.members[:EXAMPLES]] for p in w.parts})
