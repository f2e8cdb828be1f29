from __future__ import annotations

import numpy as np
import pytest

from core.retrieval.knn import KnnIndex


def _vec(*xs: float) -> np.ndarray:
    return np.array([xs], dtype=np.float32)


@pytest.fixture
def index() -> KnnIndex:
    idx = KnnIndex(dim=3)
    vecs = np.array(
        [[1, 0, 0], [0.9, 0.1, 0], [0, 1, 0], [0, 0.8, 0.2], [0, 0, 1]], dtype=np.float32
    )
    idx.add(
        [1, 2, 3, 4, 5],
        vecs,
        ["a1", "a2", "b1", "b2", "c1"],
        [("a",), ("a",), ("b",), ("b", "c"), ("c",)],
    )
    return idx


def test_ranks_intents_by_their_nearest_example(index):
    pred = index.classify(_vec(0.95, 0.05, 0))[0]
    assert pred.top == "a"
    assert pred.intents[0].best.text in {"a1", "a2"}
    assert [n.text for n in pred.neighbours][:2] == ["a2", "a1"] or [
        n.text for n in pred.neighbours
    ][:2] == ["a1", "a2"]
    assert pred.margin == pytest.approx(pred.intents[0].score - pred.intents[1].score)


def test_multi_label_neighbour_votes_for_each_of_its_intents(index):
    pred = index.classify(_vec(0, 0.8, 0.2), rule="nearest")[0]
    scores = {s.intent: s.score for s in pred.intents}
    assert scores["b"] == pytest.approx(1.0, abs=1e-5)
    assert scores["c"] == pytest.approx(1.0, abs=1e-5)


def test_k_averages_the_k_nearest_examples_of_each_intent(index):
    q = _vec(1, 0, 0)
    one = {s.intent: s.score for s in index.classify(q, k=1, rule="nearest")[0].intents}
    two = {s.intent: s.score for s in index.classify(q, k=2, rule="nearest")[0].intents}
    assert one["a"] == pytest.approx(1.0, abs=1e-5)
    assert two["a"] < one["a"]


def test_add_and_remove_change_predictions_without_rebuild(index):
    q = _vec(0.6, 0, 0.8)
    assert index.classify(q)[0].top == "c"
    index.add([9], _vec(0.6, 0, 0.8), ["new"], [("a",)])
    assert index.classify(q)[0].top == "a"
    index.remove([9])
    assert index.classify(q)[0].top == "c"
    assert 9 not in index and len(index) == 5


def test_re_adding_an_id_replaces_its_labels(index):
    index.add([5], _vec(0, 0, 1), ["c1"], [("z",)])
    assert index.classify(_vec(0, 0, 1))[0].top == "z"
    assert len(index) == 5


def test_unlabelled_items_do_not_vote_and_bad_shapes_raise(index):
    index.add([7], _vec(1, 1, 1), ["x"], [()])
    assert 7 not in index
    with pytest.raises(ValueError, match="same length"):
        index.add([1, 2], _vec(1, 0, 0), ["a"], [("a",)])
    with pytest.raises(ValueError, match="k must be"):
        index.classify(_vec(1, 0, 0), k=0)


def test_exclude_ids_gives_leave_one_out(index):
    pred = index.classify(_vec(0, 0, 1), exclude_ids=[5])[0]
    assert all(n.id != 5 for n in pred.neighbours)


def _unit(*xs: float) -> np.ndarray:
    v = np.array(xs, dtype=np.float64)
    return v / np.linalg.norm(v)


def _one_outlier_pool() -> KnnIndex:
    """Intent a: three examples around the x axis. Intent b: two examples far up the z axis and
    one stray example that leans towards a's side."""
    idx = KnnIndex(dim=3)
    vecs = np.array(
        [
            _unit(1, 0.3, 0),
            _unit(1, -0.3, 0),
            _unit(1, 0, -0.2),
            _unit(0.8, 0, 0.6),
            _unit(0, 0.2, 1),
            _unit(0, -0.2, 1),
        ],
        dtype=np.float32,
    )
    idx.add(
        list(range(6)), vecs, ["a1", "a2", "a3", "b-stray", "b1", "b2"], [("a",)] * 3 + [("b",)] * 3
    )
    return idx


def test_an_intent_close_as_a_whole_beats_one_stray_example():
    """1-NN follows b's stray example; the prototype part sees that a's examples all sit near."""
    idx = _one_outlier_pool()
    q = _unit(0.95, 0, 0.3)[None, :]
    assert idx.classify(q, rule="nearest")[0].top == "b"
    pred = idx.classify(q)[0]
    assert pred.top == "a"
    top = pred.intents[0]
    assert top.size == 3 and top.best.text in {"a1", "a2", "a3"}
    centre = _unit(*np.mean([_unit(1, 0.3, 0), _unit(1, -0.3, 0), _unit(1, 0, -0.2)], axis=0))
    assert top.prototype == pytest.approx(float(q[0] @ centre), abs=1e-5)
    assert top.score == pytest.approx((top.nearest + top.prototype) / 2)
    assert [n.labels for n in top.examples] == [("a",)] * 3


def test_prototypes_follow_every_add_and_remove_at_once():
    idx = _one_outlier_pool()
    q = _unit(0.95, 0, 0.3)[None, :]
    before = idx.classify(q)[0]
    idx.add([10, 11], np.array([q[0], q[0]]), ["b3", "b4"], [("b",), ("b",)])
    grown = {s.intent: s for s in idx.classify(q)[0].intents}
    assert grown["b"].size == 5 and grown["b"].prototype > before.intents[1].prototype
    assert idx.classify(q)[0].top == "b"
    idx.remove([10, 11])
    after = idx.classify(q)[0]
    assert after.top == "a"
    assert {s.intent: s.prototype for s in after.intents} == pytest.approx(
        {s.intent: s.prototype for s in before.intents}, abs=1e-6
    )
    idx.remove([0, 1, 2])  # an intent with no example left has no prototype and no rank
    assert [s.intent for s in idx.classify(q)[0].intents] == ["b"]


def test_leave_one_out_takes_the_item_out_of_its_prototype_too():
    idx = _one_outlier_pool()
    q = _unit(0.8, 0, 0.6)[None, :]  # the stray example itself
    top_b = {s.intent: s for s in idx.classify(q, exclude_ids=[3])[0].intents}["b"]
    rest = _unit(*np.mean([_unit(0, 0.2, 1), _unit(0, -0.2, 1)], axis=0))
    assert top_b.prototype == pytest.approx(float(q[0] @ rest), abs=1e-5)
    assert top_b.size == 2


def test_an_unknown_rule_is_refused(index):
    with pytest.raises(ValueError, match="Unknown decision rule 'lr'"):
        index.classify(_vec(1, 0, 0), rule="lr")


def test_empty_index_predicts_nothing():
    assert KnnIndex(dim=2).classify(_vec(1, 0))[0].top is None


def test_real_encoder_new_label_changes_prediction_at_once(encoder):
    idx = KnnIndex(encoder.dim)
    texts = [
        "where is my parcel",
        "track my order please",
        "I want to cancel my order",
        "stop my order",
    ]
    labels = [("track",), ("track",), ("cancel",), ("cancel",)]
    idx.add(list(range(4)), encoder.encode(texts), texts, labels)
    q = encoder.encode(["is there a gift card for the cinema"])
    before = idx.classify(q)[0].top
    idx.add(
        [10],
        encoder.encode(["do you sell gift cards"]),
        ["do you sell gift cards"],
        [("gift_cards",)],
    )
    assert before != "gift_cards"
    assert idx.classify(q)[0].top == "gift_cards"


def test_a_question_that_is_a_labelled_example_gets_that_examples_intent():
    idx = _one_outlier_pool()
    q = _unit(0.8, 0, 0.6)[None, :]  # b's stray example, nearer to a's centre than to b's
    top = idx.classify(q)[0].intents[0]
    assert top.intent == "b" and top.score == pytest.approx(1.0, abs=1e-5) and top.by_example


@pytest.mark.parametrize(
    ("rule", "k", "anchor_weight"),
    [("nearest+prototype", 2, 1.0), ("nearest", 1, 0.0), ("nearest+prototype", 1, 0.0)],
)
def test_the_score_matrix_scores_every_intent_as_classify_does(rule, k, anchor_weight):
    """The dense scores (a whole held-out fold at once) are classify's, intent by intent, with
    anchors in the prototypes and a cold-start intent scored by its anchor alone."""
    rng = np.random.default_rng(3)
    dim, names = 16, ["a", "b", "c", "d"]
    idx = KnnIndex(dim)
    vectors = rng.normal(size=(40, dim)).astype(np.float32)
    labels = [(names[i % 3],) if i % 7 else (names[i % 3], names[(i + 1) % 3]) for i in range(40)]
    idx.add(list(range(40)), vectors, [str(i) for i in range(40)], labels)
    anchor_vectors = rng.normal(size=(4, dim)).astype(np.float32)  # "d" has no example
    idx.set_anchors(names, anchor_vectors, names, anchor_weight)
    queries = rng.normal(size=(9, dim)).astype(np.float32)
    got_names, matrix = idx.score_matrix(queries, k=k, rule=rule)
    assert got_names == (["a", "b", "c", "d"] if anchor_weight else ["a", "b", "c"])
    for qi, pred in enumerate(idx.classify(queries, k=k, rule=rule, depth=100)):
        ranked = {s.intent: s.score for s in pred.intents}
        assert set(ranked) == set(got_names)
        for j, name in enumerate(got_names):
            assert matrix[qi, j] == pytest.approx(ranked[name], abs=1e-5)


def test_the_label_counts_follow_adds_replacements_and_removals(index):
    """The multi-label rule reads these counts on every prediction instead of every label set:
    they must stay what the label sets say."""
    from core.multilabel.rule import is_multilabel, is_multilabel_count

    def check() -> None:
        multi, n = index.label_counts()
        sets = index.label_sets()
        assert (multi, n) == (sum(len(set(s)) > 1 for s in sets), len(sets))
        assert is_multilabel_count(multi, n) == is_multilabel(sets)

    check()
    index.add([6, 7], np.eye(3, dtype=np.float32)[:2], ["x", "y"], [("a", "b"), ("c",)])
    check()
    index.add([6], _vec(1, 0, 0), ["x"], [("a",)])  # replaced: no longer two intents
    check()
    index.add([7], _vec(0, 1, 0), ["y"], [("b", "c", "c")])
    check()
    index.remove([7, 1, 99])
    check()
    index.add([8], _vec(0, 0, 1), ["z"], [()])  # no label: not in the pool
    check()
