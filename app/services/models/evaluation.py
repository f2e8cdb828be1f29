"""Evaluate a model version the way the product predicts, through the one contract of
:mod:`core.evaluation`: the retrain (version history) and the live Evaluation view call the same
:func:`evaluate_version`, so one version on the same data shows the same numbers.

Single-label projects are scored by the k-NN rule (a hit when the prediction is any gold intent of
the row); multi-label projects by the head (micro-F1 primary). Scored on the `test` split when
there is one, else by 5-fold cross-validation of `train`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, cast

from app.access import ProjectHandle
from app.project_settings import as_encoded
from app.services.labelling import data as data_svc
from app.services.models.versions import Version, head_options, resolve_factory
from app.serving.eval_memo import EvalMemo, evaluation_key
from app.serving.factories import FactoryBuilder
from core.encoding.cache import CachedEncoder, EmbeddingCache
from core.evaluation import (
    CV_FOLDS,
    EvalData,
    cross_validate_knn,
    evaluate_knn,
    scoring_gold,
)
from core.evaluation.multilabel import evaluate_head
from core.evaluation.scoring import knn_predict
from core.evaluation.version_metrics import VersionMetrics
from core.multilabel.head import MultiLabelHead
from core.multilabel.rule import is_multilabel
from core.retrieval.factory import PredictorFactory
from core.retrieval.scope import in_scope_labels
from storage.db import Database
from storage.utterances import list_utterances, rows_by_id

logger = logging.getLogger(__name__)


def evaluate_version(
    factory: PredictorFactory,
    data: EvalData,
    cache: EmbeddingCache,
    *,
    multi_label: bool = False,
    head: dict[str, Any] | None = None,
    progress: Callable[[int, int], None] | None = None,
    memo: EvalMemo | None = None,
    tops: list[str] | None = None,
) -> tuple[VersionMetrics, MultiLabelHead | None]:
    """Metrics of the Predictors ``factory`` builds (a version's encoder, anchors, rule, ``k``)
    on ``data`` (one shape, ``primary`` names the headline), and for a multi-label project the
    head fitted on all train rows (``head`` = its options: ``threshold``, and ``tune`` for a
    version trained before per-intent tuning left the retrain). A single-label project's accuracy
    is the accuracy of ``factory``'s Predictor over the train rows on the test rows (or fold by
    fold, by cross-validation): the Predictor that serves. A multi-label project is scored by a
    head fitted on the train rows, as it serves in every space: a version's head was fitted here,
    and a space without one (the frozen base) serves the same fit with the default options
    (:meth:`app.serving.live.LivePools.space_head`).

    Train and test texts are looked up in ``cache`` and only the missing ones encoded, in one
    length-sorted pass; ``progress(done, total)`` counts those (``cache.missing`` says how many
    there will be).

    With ``memo`` (:class:`app.serving.eval_memo.EvalMemo`) an evaluation already measured on the same
    inputs is read instead (the head is then None: pass no memo when the head is wanted), and
    one measured now is kept. ``tops``: a list that receives the top intent of each test
    question when a single-label project's test split is measured now (left empty when the
    evaluation was read or there was no test split), for a comparison question by question."""
    key = evaluation_key(factory, data, multi_label=multi_label, head=head) if memo else None
    if memo is not None and (known := memo.get(key)) is not None:
        return known, None
    encoder = cast(CachedEncoder, factory.encoder)
    vectors = cache.encode(encoder, [*data.train_texts, *data.test_texts], progress=progress)
    train_v, test_v = vectors[: len(data.train_texts)], vectors[len(data.train_texts) :]
    fitted: MultiLabelHead | None = None
    if multi_label:
        metrics, fitted = evaluate_head(
            train_v, data.train_labels, test_v, data.test_labels, **(head or {})
        )
        metrics["head"] = dict(head or {})
    elif data.test_texts:
        pool = factory.build(data.train_texts, data.train_labels, vectors=train_v)
        predicted = knn_predict(pool, test_v)
        metrics = evaluate_knn(pool, test_v, data.test_labels, predicted=predicted)
        if tops is not None:
            tops[:] = predicted
    else:
        metrics = cross_validate_knn(factory, train_v, data.train_labels, folds=CV_FOLDS)
    metrics["split"] = data.split
    if factory.anchors is not None and factory.anchors.on:
        metrics["anchor_weight"] = factory.anchors.weight
    measured = VersionMetrics.from_dict(metrics)
    if memo is not None:
        memo.put(key, measured)
    return measured, fitted


def evaluation_memo(factories: FactoryBuilder) -> EvalMemo:
    """The evaluations this data directory has measured (:mod:`app.serving.eval_memo`)."""
    return factories.memo


def gate(new: VersionMetrics, reference: VersionMetrics, tolerance: float) -> tuple[bool, str]:
    """The promotion gate: a new version may not lose more than ``tolerance`` (absolute) of the
    primary metric against the reference (the active version, or the frozen base). A metric
    that could not be measured (NaN, missing) never promotes."""
    key = new.primary
    a, b = new.score, reference.value(key)
    if a is None or b is None:
        return False, f"{key} could not be compared ({a} vs {b}); kept the active version."
    if a + tolerance >= b:
        return True, f"{key} {a:.3f} vs {b:.3f} (tolerance {tolerance:.3f}): promoted."
    return False, (
        f"{key} fell from {b:.3f} to {a:.3f}, more than the tolerance of {tolerance:.3f}; "
        "kept the active version."
    )


@dataclass(frozen=True)
class TestPrediction:
    id: int
    text: str
    gold: tuple[str, ...]
    predicted: str
    margin: float

    @property
    def correct(self) -> bool:
        return self.predicted in self.gold

    @property
    def gold_for_scoring(self) -> str:
        """The gold intent this row is scored against (:func:`core.evaluation.scoring_gold`)."""
        return scoring_gold(self.gold, self.predicted)


def test_predictions(
    factories: FactoryBuilder, p: ProjectHandle, version: Version = None
) -> tuple[str, list[TestPrediction]]:
    """Predict every labelled `test` utterance by the version's Predictor over the current pool
    (:func:`app.services.models.versions.resolve_factory`: the Predictor the evaluation scores).

    Returns the version's display label and one prediction per test row.
    """
    factory, label = resolve_factory(factories, p, version)
    with factories.db.session() as s:
        rows = [r for r in as_encoded(list_utterances(s, p.id), p.settings) if r.labels]
    train = [r for r in rows if r.split == "train" and in_scope_labels(r.labels)]
    test = [r for r in rows if r.split == "test" and in_scope_labels(r.labels)]
    if not train:
        raise ValueError("No labelled training utterances yet: label a few in the Data tab.")
    if not test:
        raise ValueError(
            "No labelled test utterances: move some to the test split to see an evaluation."
        )
    encoder = cast(CachedEncoder, factory.encoder)
    predictor = factory.build(
        [r.text for r in train],
        [r.labels for r in train],
        vectors=factories.cache.encode(encoder, [r.text for r in train]),
        ids=[r.id for r in train],
    )
    found = predictor.tops(factories.cache.encode(encoder, [r.text for r in test]), show=2)
    return label, [
        TestPrediction(r.id, r.text, in_scope_labels(r.labels), top or "", float(margin))
        for r, top, margin in zip(test, found.intents, found.margins, strict=True)
    ]


def evaluation_inputs(
    factories: FactoryBuilder, p: ProjectHandle, version: Version = None
) -> tuple[PredictorFactory, str, EvalData, bool]:
    """What an evaluation of a version runs on: its Predictor factory, its display label, the
    project's rows as it encodes them (:class:`EvalData`) and whether the project is
    multi-label. The live evaluation and the merge what-if take it from here, so the what-if
    counts the confusions of the same predictions as the confusion matrix."""
    factory, label = resolve_factory(factories, p, version)
    with factories.db.session() as s:
        rows = as_encoded(list_utterances(s, p.id), p.settings)
    multi = is_multilabel([in_scope_labels(r.labels) for r in rows if r.split == "train"])
    return factory, label, EvalData.from_rows(rows, with_unlabelled=multi), multi


def live_evaluation(
    factories: FactoryBuilder,
    p: ProjectHandle,
    version: Version = None,
    *,
    cross_validate: bool = False,
) -> VersionMetrics:
    """The version's metrics on the project's data as it is now, by :func:`evaluate_version` (the
    same function a retrain records in the history). A multi-label version's head is refitted with
    the options it was trained with. A single-label project without test rows is refused (the
    evaluation views list test rows) unless ``cross_validate``: then it is cross-validated, as a
    retrain does. ``version_label`` names the version measured."""
    factory, label, data, multi = evaluation_inputs(factories, p, version)
    if not data.train_texts:
        raise ValueError("No labelled training utterances yet: label a few in the Data tab.")
    if not multi and not data.test_texts and not cross_validate:
        raise ValueError(
            "No labelled test utterances: move some to the test split to see an evaluation."
        )
    metrics, _ = evaluate_version(
        factory,
        data,
        factories.cache,
        multi_label=multi,
        head=head_options(factories.db, p, version) if multi else None,
        memo=evaluation_memo(factories),
    )
    return replace(metrics, version_label=label)


def confusions(
    factories: FactoryBuilder,
    p: ProjectHandle,
    gold: str,
    predicted: str | None,
    version: Version = None,
) -> list[TestPrediction]:
    """The test utterances of ``gold`` that were predicted as ``predicted`` (a confusion cell),
    or, with ``predicted=None``, every one of them that was predicted wrong."""
    _, preds = test_predictions(factories, p, version)
    return [
        x
        for x in preds
        if x.gold_for_scoring == gold
        and (x.predicted == predicted if predicted is not None else not x.correct)
    ]


TEST_FIXES = ("relabel", "move", "delete")


def is_test_row(db: Database, p: ProjectHandle, utterance_id: int) -> bool:
    """Whether the utterance is in the `test` split (unknown ids refused)."""
    with db.session() as s:
        (row,) = rows_by_id(s, p.id, [utterance_id])
    return row.split == "test"


def refuse_unconfirmed_test_change(
    db: Database, p: ProjectHandle, utterance_ids: list[int] | tuple[int, ...], confirmed: bool
) -> None:
    """A test row's change needs a second, explicit step: the test split reports the accuracy,
    and a fix that follows the model's opinion bends it towards the model.

    Raises:
        ValueError: a `test` row among ``utterance_ids`` and not ``confirmed`` (nothing changed).
    """
    tests = [i for i in utterance_ids if not confirmed and is_test_row(db, p, int(i))]
    if tests:
        raise ValueError(
            f"#{', #'.join(map(str, tests))} is a test utterance: changing it changes the "
            'accuracy the test split reports. Tick "I\'m changing a test label" to confirm. '
            "Nothing was changed."
        )


def fix_test_row(
    db: Database,
    p: ProjectHandle,
    utterance_id: int,
    action: str,
    intent: str | None = None,
    *,
    confirmed: bool = False,
) -> str:
    """Relabel (as ``intent``, which the designer chose: never pre-filled), move to train or
    delete a row of the evaluation, and say what was done. A `test` row needs ``confirmed``.

    Raises:
        ValueError: an unknown action, no intent to relabel as, an unconfirmed test row.
    """
    if action not in TEST_FIXES:
        raise ValueError(f"Unknown fix {action!r}; use one of {', '.join(TEST_FIXES)}.")
    if action == "relabel" and not (intent or "").strip():
        raise ValueError("Pick the intent to relabel it as (the box starts empty on purpose).")
    refuse_unconfirmed_test_change(db, p, [utterance_id], confirmed)
    if action == "relabel":
        data_svc.label_utterance(db, p, utterance_id, [str(intent).strip()])
        return f"#{utterance_id} relabelled as {str(intent).strip()}"
    if action == "move":
        data_svc.move_split(db, p, [utterance_id], "train")
        return f"#{utterance_id} moved to train"
    data_svc.delete_utterance(db, p, utterance_id)
    return f"#{utterance_id} deleted"
