"""The order a new space's rows are encoded in (app/serving/row_plan.py): labelled rows first,
then the queue's next rows in the space it orders in meanwhile, then the others; every row once.
In the suite a row labelled a moment before sat in the old space's frontier (it stays there
until a pass checks it), and a row both among the least sure and the least covered was taken
twice: one id came twice in one chunk, and the background encoding stopped on "the same id
twice in one add"."""

from __future__ import annotations

import numpy as np
import pytest

from app.serving.row_plan import make_plan
from app.serving.row_spaces import ProjectRows, RowSpace

pytestmark = pytest.mark.fast


def test_a_row_just_labelled_in_the_old_spaces_frontier_is_planned_once_with_the_labelled():
    split = {1: "train", 2: "unlabelled", 3: "unlabelled", 4: "test", 5: "unlabelled"}
    rows = ProjectRows(7, split, {i: 1 for i in split}, {i: (f"row {i}", "") for i in split})
    old = RowSpace(7, "the active version", False, 4, None)
    # row 1 was a candidate when the old space scored it, and has been labelled since
    old.frontier.put(np.array([1, 3]), np.array([0.1, 0.2], np.float32), np.zeros(2, np.float32), 0)
    new = RowSpace(7, "a new version", False, 4, None)

    todo = make_plan(rows, new, [old], None).todo

    assert sorted(todo) == [1, 2, 3, 4, 5] and len(todo) == 5
    assert todo[:2] == [1, 3]  # the labelled row, then the old space's next candidate
    assert todo[-1] == 4  # the test rows last
