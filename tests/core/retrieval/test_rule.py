"""The rule written once (:mod:`core.retrieval.rule`): its scores are the rule's definition
computed question by question, its one ranking is what ``classify`` lists and ``tops`` gives.

Scores and margins are float sums of BLAS and faiss products, whose kernels differ between CPUs
(an AMD EPYC and an Intel Xeon round the last bit differently, and a block of 16 questions takes
another kernel than one of 50): they are compared within :data:`TOL`. What the rule defines
exactly stays exact: the ranking (ties by name), the margin 1.0 without a runner-up, 0.0 with
nothing ranked."""

from __future__ import annotations

import numpy as np
import pytest

from core.retrieval.anchors import anchor_texts
from core.retrieval.knn import NEAREST, NEAREST_PROTOTYPE, KnnIndex
from core.retrieval.rule import rank, score, tops
from core.retrieval.scores import EXACT

pytestmark = pytest.mark.fast
# float32 products summed in another order: ~1e-8 apart (1.5e-8 seen on an AMD EPYC)
TOL = 1e-6


def close(values) -> object:
    return pytest.approx(list(values), rel=0, abs=TOL)


def _pool(seed: int, *, n: int = 300, dim: int = 16, intents: int = 12) -> KnnIndex:
    """A clustered pool with multi-intent examples, exact duplicates across intents (ties) and
    anchors, two of them for intents without examples (cold)."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(intents, dim))
    labels = [int(i) for i in rng.integers(0, intents - 2, size=n)]  # the last two stay cold
    vecs = (centres[labels] + rng.normal(scale=1.2, size=(n, dim))).astype(np.float32)
    sets = [(f"i{lab:02d}",) for lab in labels]
    for i in range(0, n, 17):  # some examples carry two intents
        sets[i] = tuple(sorted({sets[i][0], f"i{(labels[i] + 1) % (intents - 2):02d}"}))
    vecs[5] = vecs[4]  # the same vector under two intents: a tie
    sets[5] = ("i00",) if sets[4] != ("i00",) else ("i01",)
    idx = KnnIndex(dim)
    idx.add(list(range(100, 100 + n)), vecs, [f"t{i}" for i in range(n)], sets)
    names = [f"i{j:02d}" for j in range(intents)]
    texts = anchor_texts(names, {})
    anchors = (centres + rng.normal(scale=0.5, size=centres.shape)).astype(np.float32)
    idx.set_anchors(names, anchors, [texts[n] for n in names], 1.0)
    return idx


@pytest.mark.parametrize("rule", [NEAREST_PROTOTYPE, NEAREST])
@pytest.mark.parametrize("seed", [0, 1])
def test_tops_equal_what_classify_ranks_first(seed, rule):
    idx = _pool(seed)
    rng = np.random.default_rng(seed + 10)
    _, _, _, stored = idx.examples()
    queries = np.vstack([rng.normal(size=(150, 16)), stored[:60]]).astype(np.float32)
    # leave-one-out for the pool's own rows, nothing excluded for the others
    exclude = [None] * 150 + list(range(100, 160))
    for excl in (None, exclude):
        for depth in (200, 7):
            want = idx.classify(queries, show=0, depth=depth, exclude_ids=excl, rule=rule)
            got = idx.tops(queries, depth=depth, exclude_ids=excl, rule=rule)
            assert got.intents == [p.top for p in want]
            assert got.scores.tolist() == close(p.score for p in want)
            assert got.margins.tolist() == close(p.margin for p in want)


def test_an_exact_match_and_a_cold_intent_rank_as_classify_ranks_them():
    idx = _pool(3)
    _, _, _, stored = idx.examples()
    cold_anchor = idx._anchors["i11"][1].astype(np.float32)
    queries = np.vstack([stored[:5], cold_anchor[None, :]])
    want = idx.classify(queries, show=0)
    got = idx.tops(queries)
    assert got.intents == [p.top for p in want]
    assert got.intents[-1] == "i11"  # its anchor alone ranks it
    assert got.margins.tolist() == close(p.margin for p in want)


def test_k_above_one_ranks_as_classify_does():
    idx = _pool(4)
    queries = np.random.default_rng(0).normal(size=(20, 16)).astype(np.float32)
    want = idx.classify(queries, k=3, show=0)
    got = idx.tops(queries, k=3)
    assert got.intents == [p.top for p in want]
    assert got.margins.tolist() == close(p.margin for p in want)


def test_an_empty_pool_ranks_nothing():
    got = KnnIndex(4).tops(np.ones((2, 4), dtype=np.float32))
    assert got.intents == [None, None]
    assert got.margins.tolist() == [0.0, 0.0]


def test_many_questions_are_scored_a_block_at_a_time(monkeypatch):
    import core.retrieval.rule as module

    idx = _pool(5)
    queries = np.random.default_rng(1).normal(size=(50, 16)).astype(np.float32)
    exclude = [100 + i if i % 3 == 0 else None for i in range(50)]
    whole = tops(idx, queries, depth=201, exclude_ids=exclude)
    monkeypatch.setattr(module, "BLOCK", 16)
    blocks = tops(idx, queries, depth=201, exclude_ids=exclude)
    assert blocks.intents == whole.intents
    # 16 questions at a time take faiss's and BLAS's small-batch kernels: the same scores within
    # rounding, the same ranking
    assert blocks.margins.tolist() == close(whole.margins) and len(blocks.scores) == 50
    assert blocks.scores.tolist() == close(whole.scores)
    assert blocks.cold == whole.cold


def test_no_intent_is_the_oos_that_predictions_say():
    from core.retrieval.factory import VectorsOnly
    from core.retrieval.predictor import Predictor

    idx = _pool(6)
    predictor = Predictor(
        VectorsOnly(16), idx, thresholds={"default": 0.55, "i01": 0.8}, multi_label=False
    )
    cold = np.vstack([idx._anchors[n][1] for n in ("i10", "i11")]).astype(np.float32)
    queries = np.vstack([np.random.default_rng(2).normal(size=(80, 16)), cold]).astype(np.float32)
    said = [row["oos"] for row, _ in predictor.predict_vectors(["q"] * len(queries), queries)]
    assert predictor.no_intent(queries) == said
    assert any(said) and not all(said)


def _by_definition(idx, q, *, k, depth, exclude, rule):
    """The rule for one question, written from its definition with the pool's stored vectors:
    the ``depth`` nearest examples (the excluded one left out of them and of its intents'
    prototypes), each intent's ``k`` nearest among them, its prototype with its weighted
    anchor, the two combined unless the question is the example; an intent without examples
    its anchor alone."""
    ids, _, sets, vectors = idx.examples()
    unit = q / np.linalg.norm(q)
    sims = vectors.astype(np.float64) @ unit
    hits = [j for j in np.argsort(-sims, kind="stable")[:depth] if ids[j] != exclude]
    anchors = {name: vec for name, (_, vec) in idx._anchors.items()} if idx.anchor_weight else {}
    out = {}
    for name in sorted({n for s in sets for n in s} | set(anchors)):
        own = [j for j in range(len(ids)) if name in sets[j] and ids[j] != exclude]
        if not any(name in s for s in sets):  # cold: the anchor alone
            out[name] = float(anchors[name] @ unit)
            continue
        near = [sims[j] for j in hits if name in sets[j]][:k]
        if not near:
            continue
        nearest = sum(near) / len(near)
        total = vectors[own].astype(np.float64).sum(axis=0) if own else None
        if name in anchors:
            weighted = idx.anchor_weight * anchors[name]
            total = weighted if total is None else total + weighted
        if rule == NEAREST or total is None or nearest >= EXACT:
            out[name] = nearest
        else:
            out[name] = 0.5 * (nearest + float(total @ unit) / np.linalg.norm(total))
    return out


@pytest.mark.parametrize("rule", [NEAREST_PROTOTYPE, NEAREST])
@pytest.mark.parametrize(("k", "depth"), [(1, 201), (3, 201), (1, 8), (2, 8)])
def test_the_scores_are_the_rule_computed_question_by_question(rule, k, depth):
    idx = _pool(7)
    _, _, _, stored = idx.examples()
    rng = np.random.default_rng(8)
    queries = np.vstack([rng.normal(size=(12, 16)), stored[:6]]).astype(np.float32)
    exclude = [None] * 12 + [100, None, 102, None, 104, None]
    found = score(idx, queries, k=k, depth=depth, exclude_ids=exclude, rule=rule)
    for qi, q in enumerate(queries):
        want = _by_definition(idx, q, k=k, depth=depth, exclude=exclude[qi], rule=rule)
        got = {
            name: found.score[qi, j]
            for j, name in enumerate(found.intents)
            if np.isfinite(found.score[qi, j])
        }
        assert set(got) == set(want)
        assert [got[n] for n in sorted(got)] == pytest.approx(
            [want[n] for n in sorted(want)], abs=TOL
        )


def test_every_example_looked_at_scores_as_a_search_deep_enough():
    """``depth=None`` (the dense score of a fold, one product with the pool) and a search that
    reaches every example are the same rule."""
    idx = _pool(9)
    queries = np.random.default_rng(9).normal(size=(30, 16)).astype(np.float32)
    for k in (1, 3):
        dense = score(idx, queries, k=k)
        searched = score(idx, queries, k=k, depth=len(idx) + 1)
        assert dense.intents == searched.intents
        assert np.allclose(dense.score, searched.score, rtol=0, atol=TOL)


def test_the_ranking_breaks_ties_by_name_and_says_when_an_anchor_alone_scored():
    names = ["a", "b", "c"]
    scores = np.array([[0.2, 0.5, 0.5], [-np.inf, 0.4, -np.inf], [0.9, 0.1, 0.3]])
    found = rank((names, scores), cold={"a"})
    assert found.intents == ["b", "b", "a"]
    assert found.margins.tolist() == pytest.approx([0.0, 1.0, 0.6])
    assert found.cold == [False, False, True]
    nothing = rank((names, np.full((1, 3), -np.inf)))
    assert nothing.intents == [None] and nothing.scores.tolist() == [0.0]
    assert nothing.margins.tolist() == [0.0]
