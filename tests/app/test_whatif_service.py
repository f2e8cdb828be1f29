"""Merge and split what-ifs on a real project: the estimate is the project's own out-of-fold
accuracy before, and an honest after; bad requests get a message."""

from __future__ import annotations

import pytest

from app.services.design import whatif as svc
from app.services.labelling import data as data_svc
from app.services.projects.projects import new_project
from core.evaluation import cross_validate_knn
from core.folds import fold_assignments
from core.retrieval.factory import PredictorFactory
from storage.projects import get_project
from storage.utterances import labelled_pool
from tests.handles import live


def test_without_test_rows_a_merge_estimate_starts_from_the_pools_cross_validated_accuracy(
    serving_state, demo
):
    tests = [r["id"] for r in data_svc.table(serving_state.db, demo) if r["split"] == "test"]
    data_svc.move_split(serving_state.db, demo, tests, "train")
    est = svc.merge(serving_state.factories, demo, "cancel_order", "refund_status")
    w = est.whatif
    with serving_state.db.session() as s:
        pid = get_project(s, str(demo)).id
        pool = labelled_pool(s, pid)
    encoder, _ = serving_state.factories.active_encoder(pid)
    vectors = serving_state.live.cache.encode(encoder, [r.text for r in pool])
    factory = PredictorFactory.for_vectors(vectors.shape[1])
    base = cross_validate_knn(factory, vectors, [r.labels for r in pool])
    assert w.n == len(pool) and w.accuracy_before == pytest.approx(base["accuracy"])
    # the after is the same cross-validation with the two intents relabelled as one (with the
    # nearest+prototype rule a merge can also cost accuracy: the merged centre lies between two)
    merged = [
        tuple(
            sorted(
                {"cancel_order+refund_status" if x in est.whatif.before else x for x in r.labels}
            )
        )
        for r in pool
    ]
    same_folds = fold_assignments([tuple(r.labels) for r in pool], w.folds, seed=0)
    after = cross_validate_knn(factory, vectors, merged, folds=w.folds, assign=same_folds)
    assert w.accuracy_after == pytest.approx(after["accuracy"])
    names, matrix = base["confusion"]["labels"], base["confusion"]["matrix"]
    i, j = names.index("cancel_order"), names.index("refund_status")
    assert w.confused == matrix[i][j] + matrix[j][i]
    assert all("cancel_order+refund_status" in (g, p) for g, p, _ in w.confusions_after)


def test_a_split_proposes_named_parts_with_examples(serving_state, demo):
    est = svc.split(serving_state.factories, demo, "track_order")
    w = est.whatif
    assert 2 <= len(w.parts) <= 4 and w.before == ("track_order",)
    with serving_state.db.session() as s:
        pool = labelled_pool(s, get_project(s, str(demo)).id)
    # every train example of it lands in one part, a two-intent row included
    assert sorted(i for p in w.parts for i in p.members) == [
        i for i, r in enumerate(pool) if "track_order" in r.labels
    ]
    assert set(est.examples) == set(w.after)
    assert all(1 <= len(texts) <= 3 for texts in est.examples.values())
    assert "Splitting track_order into" in w.summary()


def test_merging_an_intent_with_itself_or_nothing_is_refused(serving_state, demo):
    with pytest.raises(
        ValueError, match=r"two different intents to merge \(both are 'track_order'\)"
    ):
        svc.merge(serving_state.factories, demo, "track_order", "track_order")
    with pytest.raises(ValueError, match=r"Pick two intents to merge"):
        svc.merge(serving_state.factories, demo, "track_order", None)
    with pytest.raises(ValueError, match=r"Pick the intent to split"):
        svc.split(serving_state.factories, demo, "")


def test_a_multi_label_project_is_refused_with_the_reason(serving_state):
    new_project(serving_state.db, "hotel")
    rows = [("cancel my booking", "cancel"), ("refund please", "refund")] * 3
    rows += [("cancel and refund", "cancel|refund"), ("refund and cancel it", "cancel|refund")]
    for i, (text, labels) in enumerate(rows):
        data_svc.add_utterance(
            serving_state.db,
            live(serving_state, "hotel"),
            f"{text} {i}",
            labels.split("|"),
            "train",
            create=True,
        )
    with pytest.raises(ValueError, match=r"multi-label project: its classifier head decides"):
        svc.merge(serving_state.factories, live(serving_state, "hotel"), "cancel", "refund")
    with pytest.raises(ValueError, match=r"multi-label project"):
        svc.split(serving_state.factories, live(serving_state, "hotel"), "cancel")


def test_a_merge_counts_the_confusions_of_the_evaluations_confusion_matrix(serving_state, demo):
    """The what-if of the test set's most confused pair says as many confused examples as the
    confusion matrix shows between the two (it used to count the train pool out of fold, and
    said 0 for a pair the matrix showed confused)."""
    from app.services.models import evaluation as eval_svc

    m = eval_svc.live_evaluation(serving_state.factories, demo)
    names, matrix = m.confusion["labels"], m.confusion["matrix"]
    pairs = {
        (a, b): matrix[i][j] + matrix[j][i]
        for i, a in enumerate(names)
        for j, b in enumerate(names)
        if i < j
    }
    (a, b), worst = max(pairs.items(), key=lambda kv: kv[1])
    assert worst > 0
    w = svc.merge(serving_state.factories, demo, a, b).whatif
    assert w.confused == worst
    assert w.scored_on == "test" and w.n == m.n
    assert w.accuracy_before == pytest.approx(m.accuracy)
    assert "test utterances" in w.summary()
