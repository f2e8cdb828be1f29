"""``tops`` gives exactly what ``classify`` ranks first, and the margin, for every question."""

from __future__ import annotations

import numpy as np
import pytest

from core.retrieval.anchors import anchor_texts
from core.retrieval.knn import NEAREST, NEAREST_PROTOTYPE, KnnIndex
from core.retrieval.tops import tops


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
            got = tops(idx, queries, depth=depth, exclude_ids=excl, rule=rule)
            assert got.intents == [p.top for p in want]
            assert got.scores.tolist() == [p.score for p in want]
            assert got.margins.tolist() == [p.margin for p in want]


def test_an_exact_match_and_a_cold_intent_rank_as_classify_ranks_them():
    idx = _pool(3)
    _, _, _, stored = idx.examples()
    cold_anchor = idx._anchors["i11"][1].astype(np.float32)
    queries = np.vstack([stored[:5], cold_anchor[None, :]])
    want = idx.classify(queries, show=0)
    got = tops(idx, queries)
    assert got.intents == [p.top for p in want]
    assert got.intents[-1] == "i11"  # its anchor alone ranks it
    assert got.margins.tolist() == [p.margin for p in want]


def test_k_above_one_ranks_through_classify():
    idx = _pool(4)
    queries = np.random.default_rng(0).normal(size=(20, 16)).astype(np.float32)
    want = idx.classify(queries, k=3, show=0)
    got = tops(idx, queries, k=3)
    assert got.intents == [p.top for p in want]
    assert got.margins.tolist() == [p.margin for p in want]


def test_an_empty_pool_ranks_nothing():
    got = tops(KnnIndex(4), np.ones((2, 4), dtype=np.float32))
    assert got.intents == [None, None]
    assert got.margins.tolist() == [0.0, 0.0]


def test_many_questions_are_scored_a_block_at_a_time(monkeypatch):
    import core.retrieval.tops as module

    idx = _pool(5)
    queries = np.random.default_rng(1).normal(size=(50, 16)).astype(np.float32)
    exclude = [100 + i if i % 3 == 0 else None for i in range(50)]
    whole = tops(idx, queries, exclude_ids=exclude)
    monkeypatch.setattr(module, "BLOCK", 16)
    blocks = tops(idx, queries, exclude_ids=exclude)
    assert blocks.intents == whole.intents
    assert np.allclose(blocks.margins, whole.margins) and len(blocks.scores) == 50


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
