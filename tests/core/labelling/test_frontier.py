"""The queue's scores kept piece by piece (issue 72 item 1)."""

from __future__ import annotations

import numpy as np

from core.labelling.frontier import Frontier


def test_the_frontier_picks_the_smallest_and_follows_new_labels():
    f = Frontier()
    f.put(np.array([1, 2, 3, 4]), np.array([0.4, 0.1, 0.3, 0.2]), np.array([0.5, 0.6, 0.1, 0.9]), 0)
    assert f.smallest_margins(2).tolist() == [2, 4]
    assert f.smallest_margins(2, exclude=[2]).tolist() == [4, 3]
    assert f.least_covered(1).tolist() == [3]
    f.raise_cover(np.array([3, 99]), np.array([0.95, 0.1]))  # 99: not a candidate, ignored
    assert f.least_covered(1).tolist() == [1]
    f.drop([4])
    assert f.smallest_margins(4).tolist() == [2, 3, 1] and 4 not in f and len(f) == 3
    f.rescored(np.array([1]), np.array([0.0]), 1)
    assert f.smallest_margins(1).tolist() == [1] and f.stale(1) == 2
    assert sorted(f.oldest(5, before=1).tolist()) == [2, 3]
    added, removed = f.pool_changes({7: ("hi", ("greet",))})
    assert (added, removed) == ([7], [])
    assert f.pool_changes({}) == ([], [7])
