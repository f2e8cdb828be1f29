"""Bulk imports: all or nothing, clear messages instead of constraint errors."""

from __future__ import annotations

import pytest

from storage import StorageError
from storage.imports import import_rows
from storage.utterances import (
    NewUtterance,
    list_utterances,
)


def test_import_is_all_or_nothing(db, project):
    rows = [
        NewUtterance("brand new", ("track_order",)),
        NewUtterance("cancel it please", ("refund",)),
    ]
    with pytest.raises(StorageError, match="already in this project"), db.session() as s:
        import_rows(s, project, rows)
    with db.session() as s:
        assert not list_utterances(s, project, search="brand new")


def test_a_text_twice_in_one_import_is_a_message_not_a_crash(db, project):
    rows = [NewUtterance("twice", ("refund",)), NewUtterance("twice", ("track_order",))]
    with pytest.raises(StorageError, match="appears twice"), db.session() as s:
        import_rows(s, project, rows)
    with db.session() as s:
        assert not list_utterances(s, project, search="twice")


# A relabel in bulk does what the row-by-row path did: set_labels, then update_utterance(split=).
# (seed labels, seed split) -> (imported labels, imported split)
RELABEL_CASES = {
    "same": ((("a",), "train"), (("a",), "train")),
    "other intent": ((("a",), "train"), (("b",), "train")),
    "one more, stays in test": ((("a",), "test"), (("a", "b"), "test")),
    "unlabelled gets an intent": (((), "unlabelled"), (("a",), "train")),
    "unlabelled gets an intent, into test": (((), "unlabelled"), (("a",), "test")),
    "loses its intent": ((("a",), "train"), ((), "unlabelled")),
    "loses its intent, stays in train": ((("a",), "train"), ((), "train")),
    "only the split": ((("a",), "train"), (("a",), "test")),
    "nothing, stays unlabelled": (((), "unlabelled"), ((), "unlabelled")),
    "nothing, into train": (((), "unlabelled"), ((), "train")),
    "other order, a repeat": ((("a", "b"), "train"), (("b", "a", "b"), "train")),
    "a new intent": ((("a",), "test"), (("brand_new",), "test")),
}


def _seeded(s, name):
    from storage.projects import create_intent, create_project
    from storage.utterances import add_utterance

    pid = create_project(s, name).id
    for intent in ("a", "b"):
        create_intent(s, pid, intent)
    for text, ((labels, split), _) in RELABEL_CASES.items():
        add_utterance(s, pid, text, labels, split=split)
    return pid


def _snapshot(s, pid):
    from sqlalchemy import select

    from storage.tables import LabelEvent

    rows = {r.text: (r.labels, r.split, r.version) for r in list_utterances(s, pid, limit=1000)}
    events = [
        (e.utterance_text, e.action, e.before, e.after, e.split_before, e.split_after, e.user_id)
        for e in s.scalars(
            select(LabelEvent)
            .where(LabelEvent.project_id == pid, LabelEvent.action.in_(["label", "split"]))
            .order_by(LabelEvent.id)
        )
    ]
    batches = set(
        s.scalars(
            select(LabelEvent.batch).where(
                LabelEvent.project_id == pid, LabelEvent.action.in_(["label", "split"])
            )
        )
    )
    return rows, events, batches


def test_a_relabel_in_bulk_does_exactly_what_set_labels_then_update_utterance_did(db):
    from storage.projects import create_intent
    from storage.utterances import set_labels, update_utterance

    rows = [
        NewUtterance(text, labels, split) for text, (_, (labels, split)) in RELABEL_CASES.items()
    ]
    with db.session() as s:
        ref, bulk = _seeded(s, "row by row"), _seeded(s, "bulk")
        ids = {r.text: r.id for r in list_utterances(s, ref, limit=1000)}
        create_intent(s, ref, "brand_new")
        for r in rows:  # the import's relabel path before it wrote in bulk
            set_labels(s, ref, ids[r.text], r.labels, user_id=None, batch="one")
            update_utterance(s, ref, ids[r.text], split=r.split, user_id=None, batch="one")
        counts = import_rows(s, bulk, rows, on_existing="relabel")
        expected, got = _snapshot(s, ref), _snapshot(s, bulk)
    assert counts == (0, len(rows), 0, ("brand_new",), 0)
    assert got[0] == expected[0]  # labels, split and version of every utterance
    assert got[1] == expected[1]  # the same audit events, in the same order
    assert len(got[2]) == 1  # one batch


def test_a_bad_import_is_refused_before_anything_is_written(db, project):
    from storage.imports import plan_import

    fine = [NewUtterance(f"fine {i}", ("refund",)) for i in range(5)]
    bad = {
        "not intents of this project: nope": ([*fine, NewUtterance("x", ("nope",))], False, "skip"),
        "cannot contain '|'": ([*fine, NewUtterance("x", ("a|b",))], True, "skip"),
        "appears twice": ([*fine, fine[0]], True, "skip"),
        "already in this project": ([*fine, NewUtterance("hello there")], True, "error"),
        "never `unlabelled`": (
            [*fine, NewUtterance("hello there", ("refund",), "unlabelled")],
            True,
            "relabel",
        ),
    }
    for message, (rows, create, on_existing) in bad.items():
        with pytest.raises(StorageError, match=message), db.session() as s:
            plan_import(s, project, rows, create_missing_intents=create, on_existing=on_existing)
    with db.session() as s:
        assert not list_utterances(s, project, search="fine")


@pytest.mark.parametrize(
    ("on_existing", "counts", "late_labels"),
    [("skip", (1, 0, 1), ("track_order",)), ("relabel", (1, 1, 0), ("refund",))],
)
def test_rows_added_by_someone_else_after_the_check_are_skipped_or_relabelled(
    db, project, on_existing, counts, late_labels
):
    from storage.imports import new_batch, plan_import, write_rows
    from storage.utterances import add_utterance

    rows = [NewUtterance("late", ("refund",)), NewUtterance("early", ("refund",))]
    with db.session() as s:
        plan = plan_import(s, project, rows, on_existing=on_existing)
    assert plan == (rows, 0, ())
    with db.session() as s:  # someone else, between the check and the write
        add_utterance(s, project, "late", ["track_order"])
    with db.session() as s:
        got = write_rows(s, project, plan.rows, batch=new_batch(), on_existing=on_existing)
    assert got[:3] == counts
    with db.session() as s:
        assert list_utterances(s, project, search="late")[0].labels == late_labels
        assert list_utterances(s, project, search="early")[0].labels == ("refund",)
