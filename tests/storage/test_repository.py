from __future__ import annotations

import pytest
from sqlalchemy import text

from storage import ConflictError, StorageError
from storage.datasets import content_hash, snapshot, snapshot_rows
from storage.projects import (
    create_intent,
    create_project,
    delete_intent,
    list_intents,
    merge_intents,
    rename_intent,
)
from storage.tables import LabelEvent
from storage.utterances import (
    NewUtterance,
    add_utterance,
    import_rows,
    labelled_pool,
    list_utterances,
    pool_revision,
    set_labels,
    undo_last,
    update_utterance,
)


@pytest.fixture
def project(db):
    with db.session() as s:
        p = create_project(s, "shop")
        add_utterance(s, p.id, "where is my parcel", ["track_order"])
        add_utterance(s, p.id, "cancel it please", ["cancel_order"])
        add_utterance(s, p.id, "cancel and refund", ["cancel_order", "refund"])
        add_utterance(s, p.id, "hello there", [], split="unlabelled")
        return p.id


def test_sqlite_runs_in_wal_mode_with_foreign_keys(db):
    with db.engine.connect() as conn:
        assert conn.execute(text("PRAGMA journal_mode")).scalar() == "wal"
        assert conn.execute(text("PRAGMA foreign_keys")).scalar() == 1
        assert conn.execute(text("SELECT version_num FROM alembic_version")).scalar() == "0001"


def test_migrations_are_idempotent(tmp_path):
    from storage.db import Database, sqlite_url

    url = sqlite_url(tmp_path / "x.db")
    Database(url).dispose()
    Database(url).dispose()  # second open must not fail or duplicate anything


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


def test_merge_is_one_undo_batch_and_recreates_deleted_intents(db, project):
    with db.session() as s:
        n = merge_intents(s, project, ["refund", "cancel_order"], "cancel_or_refund")
        assert n == 2
        assert {i.name for i in list_intents(s, project)} == {"cancel_or_refund", "track_order"}
    with db.session() as s:
        undo_last(s, project)
    with db.session() as s:
        rows = {r.text: r.labels for r in list_utterances(s, project)}
        assert rows["cancel and refund"] == ("cancel_order", "refund")
        assert rows["cancel it please"] == ("cancel_order",)


def test_delete_intent_keeps_utterances_and_undo_brings_labels_back(db, project):
    with db.session() as s:
        assert delete_intent(s, project, "refund") == 1
        assert len(list_utterances(s, project)) == 4
        undo_last(s, project)
        assert {r.text: r.labels for r in list_utterances(s, project)}["cancel and refund"] == (
            "cancel_order",
            "refund",
        )


def test_rename_refuses_an_existing_name(db, project):
    with db.session() as s, pytest.raises(StorageError, match="already exists; merge"):
        rename_intent(s, project, "refund", "cancel_order")


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


def test_snapshot_hash_is_stable_and_content_addressed(db, project):
    with db.session() as s:
        a = snapshot(s, project)
        b = snapshot(s, project)
        assert a.id == b.id and len(a.content_hash) == 64
        assert content_hash(snapshot_rows(a)) == a.content_hash
        add_utterance(s, project, "one more", ["refund"])
        assert snapshot(s, project).content_hash != a.content_hash


def test_pool_revision_changes_on_every_label_change(db, project):
    with db.session() as s:
        r0 = pool_revision(s, project)
        uid = list_utterances(s, project, search="hello")[0].id
        set_labels(s, project, uid, ["greeting"])
        assert pool_revision(s, project) != r0


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
