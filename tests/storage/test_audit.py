"""The audit log as batches: undo any recent change that later edits did not touch, deleted
utterances come back, an import is one batch."""

from __future__ import annotations

import pytest

from storage import ConflictError
from storage.audit import recent_batches, undo_batch, undo_last
from storage.deleted import delete_utterance
from storage.imports import import_rows
from storage.utterances import (
    NewUtterance,
    list_utterances,
    set_labels,
)


def _ids(s, project):
    return {r.text: r.id for r in list_utterances(s, project)}


def _labels(s, project):
    return {r.text: (r.labels, r.split) for r in list_utterances(s, project)}


def test_an_earlier_batch_is_undone_alone_when_later_edits_touched_other_rows(db, project):
    with db.session() as s:
        ids = _ids(s, project)
        before = _labels(s, project)
        set_labels(s, project, ids["hello there"], ["refund"], batch="b1")
        set_labels(s, project, ids["cancel it please"], ["refund"], batch="b1")
        set_labels(s, project, ids["where is my parcel"], ["cancel_order"], batch="b2")
    with db.session() as s:
        batches = recent_batches(s, project)
        assert [(b.id, b.size, b.undoable) for b in batches[:2]] == [
            ("b2", 1, True),
            ("b1", 2, True),
        ]
        undo_batch(s, project, "b1")
    with db.session() as s:
        now = _labels(s, project)
        assert now["hello there"] == before["hello there"]  # back to unlabelled
        assert now["cancel it please"] == before["cancel it please"]
        assert now["where is my parcel"] == (("cancel_order",), "train")  # b2 kept
        assert {b.id: b.undone for b in recent_batches(s, project)}["b1"] is True
        with pytest.raises(ConflictError, match="undone already"):
            undo_batch(s, project, "b1")


def test_a_batch_whose_rows_were_edited_later_is_refused_and_nothing_changes(db, project):
    with db.session() as s:
        uid = _ids(s, project)["hello there"]
        set_labels(s, project, uid, ["refund"], batch="b1")
        set_labels(s, project, uid, ["track_order"], batch="b2")
    with db.session() as s:
        blocked = {b.id: b for b in recent_batches(s, project)}["b1"]
        assert not blocked.undoable and "changed since" in blocked.blocked_by
        with pytest.raises(ConflictError, match="edited since"):
            undo_batch(s, project, "b1")
        assert _labels(s, project)["hello there"] == (("track_order",), "train")
        undo_batch(s, project, "b2")  # the later one first, then the earlier one is free
        undo_batch(s, project, "b1")
        assert _labels(s, project)["hello there"] == ((), "unlabelled")


def test_a_deleted_utterance_comes_back_with_its_labels_and_split(db, project):
    with db.session() as s:
        before = _labels(s, project)["cancel and refund"]
        delete_utterance(s, project, _ids(s, project)["cancel and refund"])
    with db.session() as s:
        assert "cancel and refund" not in _labels(s, project)
        undone = undo_last(s, project)
        assert [e.action for e in undone] == ["delete"]
        assert _labels(s, project)["cancel and refund"] == before


def test_an_import_is_one_batch_and_its_undo_removes_the_rows(db, project):
    rows = [NewUtterance(f"new text {i}", ("refund",)) for i in range(5)]
    with db.session() as s:
        import_rows(s, project, rows)
    with db.session() as s:
        latest = recent_batches(s, project)[0]
        assert (latest.action, latest.size, latest.undoable) == ("import", 5, True)
        undo_batch(s, project, latest.id)
        assert not any(t.startswith("new text") for t in _labels(s, project))


def test_an_undone_delete_brings_the_same_row_back_under_its_own_id(db, project):
    """Links, notes and exports cite an utterance by id: the undo of its delete restores that id,
    its context, entity spans and creation time, and its history (issue 47, item 6)."""
    from storage.audit import recent_events
    from storage.tables import Utterance

    with db.session() as s:
        uid = _ids(s, project)["cancel and refund"]
        u = s.get(Utterance, uid)
        u.context, u.entities = "How can I help?", [{"start": 0, "end": 6, "slot": "action"}]
        was = (u.context, list(u.entities), u.created_at)
        set_labels(s, project, uid, ["track_order"], batch="relabel")
    with db.session() as s:
        delete_utterance(s, project, uid, batch="gone")
    with db.session() as s:
        assert all(e.utterance_id is None for e in recent_events(s, project) if e.batch == "gone")
        undo_batch(s, project, "gone")
    with db.session() as s:
        assert _ids(s, project)["cancel and refund"] == uid
        u = s.get(Utterance, uid)
        assert (u.context, list(u.entities), u.created_at) == was
        assert _labels(s, project)["cancel and refund"] == (("track_order",), "train")
        # its history is its own again: the relabel and the delete are this row's events
        mine = {e.batch for e in recent_events(s, project) if e.utterance_id == uid}
        assert {"relabel", "gone"} <= mine


def test_an_undone_delete_whose_id_was_taken_meanwhile_comes_back_under_a_new_one(db, project):
    """SQLite gives the highest id, once freed, to the next new row: the restored utterance then
    takes a new id and the other keeps its own; each one's history stays its own."""
    from storage.audit import recent_events
    from storage.utterances import add_utterance

    with db.session() as s:
        ids = _ids(s, project)
        last = max(ids.values())
        text = next(t for t, i in ids.items() if i == last)
        delete_utterance(s, project, last, batch="gone")
        taker = add_utterance(s, project, "a new question since", ["refund"]).id
    assert taker == last or db.engine.dialect.name != "sqlite"  # PostgreSQL never reuses one
    with db.session() as s:  # the newcomer deleted and restored while the first is still gone
        delete_utterance(s, project, taker, batch="gone too")
    with db.session() as s:
        undo_batch(s, project, "gone too")
    with db.session() as s:
        undo_batch(s, project, "gone")
    with db.session() as s:
        now = _ids(s, project)
        assert now["a new question since"] == taker
        assert text in now and now[text] != taker
        owner = {i: t for t, i in now.items()}
        linked = [e for e in recent_events(s, project) if e.utterance_id is not None]
        assert all(e.utterance_text == owner[e.utterance_id] for e in linked)
        assert "gone" in {e.batch for e in linked if e.utterance_id == now[text]}
        assert "gone too" in {e.batch for e in linked if e.utterance_id == taker}
