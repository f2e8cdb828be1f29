"""Utterances and labels: many-to-many labels, filters, the labelling rule, audit and undo,
optimistic locking, the pool revision."""

from __future__ import annotations

import pytest

from storage import ConflictError, StorageError
from storage.audit import undo_last
from storage.errors import NotFoundError
from storage.pool_state import pool_revision, pool_stamp
from storage.projects import (
    create_intent,
    describe_intent,
    list_intents,
    rename_intent,
    set_project_setting,
)
from storage.tables import LabelEvent
from storage.utterances import (
    add_utterance,
    count_with_context,
    label_counts,
    labelled_pool,
    list_utterances,
    set_labels,
    update_utterance,
)


def test_labels_are_many_to_many_and_pool_skips_unlabelled(db, project):
    with db.session() as s:
        rows = {r.text: r for r in list_utterances(s, project)}
        assert rows["cancel and refund"].labels == ("cancel_order", "refund")
        pool = labelled_pool(s, project)
        assert {r.text for r in pool} == {
            "where is my parcel",
            "cancel it please",
            "cancel and refund",
        }
        assert [i.name for i in list_intents(s, project)] == [
            "cancel_order",
            "refund",
            "track_order",
        ]


def test_label_counts_are_the_pools_rows_with_two_labels_and_with_one(db, project):
    with db.session() as s:
        add_utterance(s, project, "refund and track it", ["refund", "track_order"])
        add_utterance(s, project, "a test with two", ["refund", "track_order"], split="test")
        add_utterance(s, project, "no intent yet", [], split="unlabelled")
        pool = labelled_pool(s, project)
        two = sum(len(r.labels) > 1 for r in pool)
        assert (two, len(pool)) == (2, 4)  # the project's one row of two, and the new one
        assert label_counts(s, project) == (two, len(pool))
        assert label_counts(s, project, "test") == (1, 1)
        assert label_counts(s, project, "unlabelled") == (0, 0)


def test_filters_by_intent_split_and_text(db, project):
    with db.session() as s:
        assert [
            r.text for r in list_utterances(s, project, intent="cancel_order", search="REFUND")
        ] == ["cancel and refund"]
        assert [r.text for r in list_utterances(s, project, intent="(none)")] == ["hello there"]
        assert [r.text for r in list_utterances(s, project, split="unlabelled")] == ["hello there"]
        # LIKE wildcards in the search are literal characters
        assert list_utterances(s, project, search="%") == []


def test_set_labels_logs_event_and_undo_restores(db, project):
    with db.session() as s:
        uid = next(r.id for r in list_utterances(s, project) if r.text == "where is my parcel")
        set_labels(s, project, uid, ["cancel_order", "track_order"])
    with db.session() as s:
        ev = s.query(LabelEvent).filter_by(utterance_id=uid, action="label").one()
        assert ev.before == ["track_order"] and ev.after == ["cancel_order", "track_order"]
        undone = undo_last(s, project)
        assert len(undone) == 1
    with db.session() as s:
        assert list_utterances(s, project, ids=[uid])[0].labels == ("track_order",)
        # the undo is itself audited
        assert s.query(LabelEvent).filter_by(utterance_id=uid, action="undo").count() == 1


def test_bad_values_are_refused(db, project):
    with db.session() as s:
        with pytest.raises(StorageError, match="empty"):
            add_utterance(s, project, "   ", ["x"])
        with pytest.raises(StorageError, match="longer than 2000"):
            add_utterance(s, project, "a" * 2001, ["x"])
        with pytest.raises(StorageError, match="already in this project"):
            add_utterance(s, project, "cancel it please", ["x"])
        with pytest.raises(StorageError, match="Unknown split"):
            add_utterance(s, project, "new one", ["x"], split="dev")
        with pytest.raises(StorageError, match="cannot contain"):
            create_intent(s, project, "a|b")


def test_stale_version_is_a_conflict(db, project):
    with db.session() as s:
        row = list_utterances(s, project, search="parcel")[0]
        update_utterance(s, project, row.id, text="where is my parcel now")
    with db.session() as s, pytest.raises(ConflictError, match="changed by someone else"):
        update_utterance(s, project, row.id, text="stale edit", expected_version=row.version)


def test_pool_revision_changes_on_every_label_change(db, project):
    with db.session() as s:
        r0 = pool_revision(s, project)
        uid = list_utterances(s, project, search="hello")[0].id
        set_labels(s, project, uid, ["greeting"])
        assert pool_revision(s, project) != r0


def test_the_pool_stamp_changes_with_everything_a_pool_is_built_from_and_only_then(db, project):
    def stamp() -> tuple[int, ...]:
        with db.session() as s:
            return pool_stamp(s, project)

    changes = {
        "label": lambda s: set_labels(
            s, project, list_utterances(s, project, search="hello")[0].id, ["greeting"]
        ),
        "edit": lambda s: update_utterance(
            s, project, list_utterances(s, project, search="parcel")[0].id, text="my parcel?"
        ),
        "insert": lambda s: add_utterance(s, project, "a new one", [], split="unlabelled"),
        "description": lambda s: describe_intent(s, project, "refund", "Money back"),
        "rename": lambda s: rename_intent(s, project, "refund", "refunds"),
        "new intent": lambda s: create_intent(s, project, "empty_for_now"),
        "setting": lambda s: set_project_setting(s, project, "anchor_weight", 0.3),
    }
    seen = {stamp()}
    for what, change in changes.items():
        with db.session() as s:
            list_utterances(s, project)  # reading changes nothing
        assert stamp() in seen, f"{what}: a read changed the stamp"
        with db.session() as s:
            change(s)
        now = stamp()
        assert now not in seen, f"{what} left the stamp as it was"
        seen.add(now)
    with db.session() as s, pytest.raises(NotFoundError):
        pool_stamp(s, project + 100)


def test_labelling_an_unlabelled_utterance_moves_it_into_the_pool_and_one_undo_reverts_both(
    db, project
):
    with db.session() as s:
        hello = next(r for r in list_utterances(s, project) if r.text == "hello there")
        row = set_labels(s, project, hello.id, ["greet"])
        assert row.split == "train"
        assert "hello there" in {r.text for r in labelled_pool(s, project)}
    with db.session() as s:
        assert len(undo_last(s, project)) == 1
        back = next(r for r in list_utterances(s, project) if r.text == "hello there")
        assert (back.split, back.labels) == ("unlabelled", ())


def test_a_chosen_split_wins_over_the_labelling_rule(db, project):
    with db.session() as s:
        hello = next(r for r in list_utterances(s, project) if r.text == "hello there")
        assert set_labels(s, project, hello.id, ["greet"], split="test").split == "test"
        parcel = next(r for r in list_utterances(s, project) if r.text == "where is my parcel")
        # a labelled test row relabelled stays in test; clearing a train row's labels keeps it
        assert set_labels(s, project, parcel.id, []).split == "train"
        added = add_utterance(s, project, "hi again", ["greet"], split="unlabelled")
        assert added.split == "train"


def test_a_labelled_utterance_cannot_be_moved_to_unlabelled(db, project):
    with db.session() as s:
        parcel = next(r for r in list_utterances(s, project) if r.text == "where is my parcel")
    with pytest.raises(StorageError, match="never `unlabelled`"), db.session() as s:
        update_utterance(s, project, parcel.id, split="unlabelled")
    with db.session() as s:
        assert next(r for r in list_utterances(s, project) if r.id == parcel.id).split == "train"
        set_labels(s, project, parcel.id, [])
        assert update_utterance(s, project, parcel.id, split="unlabelled").split == "unlabelled"


def test_the_turn_before_an_utterance_is_stored_trimmed_and_reaches_the_pool(db, project):
    """The `context` column has been in the schema since migration 0001 (text, '' = none)."""
    with db.session() as s:
        add_utterance(s, project, "yes please", ["cancel_order"], context="  Cancel it?  ")
        pool = {r.text: r.context for r in labelled_pool(s, project)}
        assert pool["yes please"] == "Cancel it?" and pool["where is my parcel"] == ""
        assert list_utterances(s, project, search="yes please")[0].context == "Cancel it?"
        add_utterance(s, project, "no thanks", [], split="unlabelled", context="Anything else?")
        add_utterance(s, project, "hm", [], split="unlabelled", context="   ")  # blank: none
        carried = sum(1 for r in list_utterances(s, project) if r.context)
        assert count_with_context(s, project) == carried == 2


@pytest.mark.parametrize(
    ("context", "message"),
    [("x" * 2001, "Context is longer than 2000"), ("a\x00b", "Context contains a NUL")],
)
def test_a_bad_context_is_refused_and_nothing_is_added(db, project, context, message):
    with db.session() as s:
        before = len(list_utterances(s, project))
        with pytest.raises(StorageError, match=message):
            add_utterance(s, project, "yes please", ["cancel_order"], context=context)
        assert len(list_utterances(s, project)) == before


def test_a_session_without_the_apps_rule_changes_no_existing_item(db, project):
    """Issue 59: storage asks the app's rule before it changes an utterance that exists; a
    session nobody installed a rule on (a write path that skipped ``app.access.writing``) is
    refused at every such change, and nothing moves. Only a session that says it acts as no user
    (``guard.trusted``: storage's tests, a bench) changes anything."""
    from storage import guard
    from storage.audit import undo_batch
    from storage.bulk_labels import label_rows
    from storage.db import Database
    from storage.deleted import delete_utterance
    from storage.imports import import_rows
    from storage.utterances import NewUtterance

    plain = Database(db.url, apply_migrations=False)  # as the app opens it: no rule by default
    try:
        with plain.session() as s:
            rows = {r.text: r for r in list_utterances(s, project)}
        uid = rows["where is my parcel"].id
        version = rows["where is my parcel"].version
        changes = [
            lambda s: set_labels(s, project, uid, ["refund"]),
            lambda s: update_utterance(s, project, uid, text="where is my box"),
            lambda s: update_utterance(s, project, uid, split="test"),
            lambda s: delete_utterance(s, project, uid),
            lambda s: label_rows(s, project, {uid: version}, ["refund"], batch="b1"),
            lambda s: import_rows(
                s, project, [NewUtterance("where is my parcel", ("refund",))], on_existing="relabel"
            ),
        ]
        for change in changes:
            with pytest.raises(guard.NoRuleError, match="No rule decides"), plain.session() as s:
                change(s)
        with plain.session() as s:
            undo_from = s.query(LabelEvent).filter_by(project_id=project).first().batch
        with pytest.raises(guard.NoRuleError), plain.session() as s:
            undo_batch(s, project, undo_from)
        with plain.session() as s:
            after = {r.text: r for r in list_utterances(s, project)}
        assert after == rows  # nothing changed, through any of them
        with plain.session() as s:  # a new utterance changes no existing item: no rule needed
            add_utterance(s, project, "a new one", ["refund"])
            guard.trusted(s)  # said on purpose: this session acts as no user
            set_labels(s, project, uid, ["refund"])
        with plain.session() as s:
            assert list_utterances(s, project, ids=[uid])[0].labels == ("refund",)
    finally:
        plain.dispose()
