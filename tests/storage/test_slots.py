"""The slot book, templates and entity annotations stored on a real database (migrated to 0005)."""

from __future__ import annotations

import pytest

from storage.errors import NotFoundError
from storage.projects import delete_intent, get_project
from storage.slots import (
    add_slot_values,
    add_templates,
    entities_by_text,
    set_entities,
    set_slot_values,
    set_templates,
    slot_book,
    templates_by_intent,
)
from storage.utterances import find_by_text, update_utterance
from tests.storage.conftest import old_database


def test_slot_values_and_templates_round_trip_and_imports_only_add_what_is_new(db, project):
    with db.session() as s:
        set_slot_values(s, project, "city", ["Berlin", "Paris"])
        set_templates(s, project, "track_order", ["where is my {thing}", "track {thing}"])
        assert add_slot_values(s, project, {"city": ["Paris", "Rome"], "thing": ["parcel"]}) == 2
        assert add_templates(s, project, {"track_order": ["track {thing}", "find {thing}"]}) == 1
    with db.session() as s:
        assert slot_book(s, project) == {"city": ["Berlin", "Paris", "Rome"], "thing": ["parcel"]}
        assert templates_by_intent(s, project) == {
            "track_order": ["where is my {thing}", "track {thing}", "find {thing}"]
        }
        set_slot_values(s, project, "city", [])  # an empty list removes the slot
        assert "city" not in slot_book(s, project)


def test_templates_of_an_unknown_intent_are_refused_and_go_with_a_deleted_intent(db, project):
    with db.session() as s, pytest.raises(NotFoundError):
        set_templates(s, project, "no_such_intent", ["x {y}"])
    with db.session() as s:
        set_templates(s, project, "cancel_order", ["cancel {thing}"])
        delete_intent(s, project, "cancel_order")
    with db.session() as s:
        assert templates_by_intent(s, project) == {}


def test_entity_annotations_are_kept_and_follow_their_value_when_the_text_is_edited(db, project):
    span = {"start": 9, "end": 15, "entity": "thing"}
    with db.session() as s:
        assert set_entities(s, project, {"where is my parcel": [span], "not here": [span]}) == 1
        assert entities_by_text(s, project) == {"where is my parcel": [span]}
        uid = find_by_text(s, project, "where is my parcel")
        assert uid is not None
        update_utterance(s, project, uid, text="so where is my parcel now")
        assert entities_by_text(s, project) == {
            "so where is my parcel now": [{"start": 12, "end": 18, "entity": "thing"}]
        }
        update_utterance(s, project, uid, text="where is it")  # the value was edited away
        assert entities_by_text(s, project) == {}


def test_deleting_a_project_removes_its_slot_book(db, project):
    with db.session() as s:
        set_slot_values(s, project, "city", ["Berlin"])
        s.delete(get_project(s, project))
    with db.session() as s:
        assert slot_book(s, project) == {}


def test_an_existing_database_gains_the_slot_tables_and_its_utterances_no_annotations(tmp_path):
    from sqlalchemy import inspect, text

    from storage.db import Database

    url = old_database(
        tmp_path / "old.db",
        "0004",
        "INSERT INTO projects (id, name, description, base_encoder, read_only, settings,"
        " created_at, version) VALUES (1, 'old', '', 'minilm', 0, '{}', '2026-01-01', 1)",
        "INSERT INTO utterances (project_id, text, split, context, created_at, updated_at,"
        " version) VALUES (1, 'hi', 'train', '', '2026-01-01', '2026-01-01', 1)",
        "INSERT INTO intents (id, project_id, name, description, created_at, version)"
        " VALUES (1, 1, 'greet', '', '2026-01-01', 1)",
        "INSERT INTO labels VALUES (1, 1, '2026-01-01')",
    )
    db = Database(url)  # migrates with foreign keys on, as the app does
    assert {"slot_values", "templates"} <= set(inspect(db.engine).get_table_names())
    with db.engine.connect() as conn:  # the label survived (a table rebuild would cascade it away)
        assert conn.execute(text("SELECT utterance_id, intent_id FROM labels")).all() == [(1, 1)]
    with db.session() as s:
        assert entities_by_text(s, 1) == {}
        set_entities(s, 1, {"hi": [{"start": 0, "end": 2, "entity": "greeting"}]})
    with db.session() as s:
        assert entities_by_text(s, 1) == {"hi": [{"start": 0, "end": 2, "entity": "greeting"}]}
    db.dispose()


def test_merging_intents_moves_their_templates_to_the_target_once(db, project):
    from storage.projects import merge_intents

    with db.session() as s:
        set_templates(s, project, "cancel_order", ["cancel {thing}", "stop {thing}"])
        set_templates(s, project, "refund", ["refund {thing}", "cancel {thing}"])
        merge_intents(s, project, ["cancel_order"], "refund")
    with db.session() as s:
        assert sorted(templates_by_intent(s, project)["refund"]) == [
            "cancel {thing}",
            "refund {thing}",
            "stop {thing}",
        ]


def test_slot_values_keep_their_synonyms_and_an_old_database_gains_them(db, project, tmp_path):
    """Issue 66: an entity type travels whole between platforms (Dialogflow's entries, Rasa's
    synonym maps, CLU's lists, Lex's slot type values): a value keeps the other ways it is
    written (migration 0014); an import adds the synonyms a value lacks, and an edit of the
    slot's values keeps those of the values it keeps."""
    from sqlalchemy import text

    from storage.db import Database
    from storage.slots import slot_synonyms

    with db.session() as s:
        add_slot_values(s, project, {"card": ["credit", "debit"]}, {"card": {"credit": ["cc"]}})
        add_slot_values(
            s, project, {"card": ["credit"]}, {"card": {"credit": ["cc", "credit card"]}}
        )
        assert slot_synonyms(s, project) == {"card": {"credit": ["cc", "credit card"]}}
        set_slot_values(s, project, "card", ["credit", "gold"])
    with db.session() as s:
        assert slot_book(s, project) == {"card": ["credit", "gold"]}
        assert slot_synonyms(s, project) == {"card": {"credit": ["cc", "credit card"]}}
    url = old_database(
        tmp_path / "old.db",
        "0012",
        "INSERT INTO projects (id, name, description, base_encoder, read_only, settings,"
        " created_at, version) VALUES (1, 'old', '', 'minilm', 0, '{}', '2026-01-01', 1)",
        "INSERT INTO slot_values (project_id, slot, value, created_at)"
        " VALUES (1, 'city', 'Paris', '2026-01-01')",
    )
    old = Database(url)
    with old.session() as s:
        assert slot_book(s, 1) == {"city": ["Paris"]} and slot_synonyms(s, 1) == {}
        add_slot_values(s, 1, {}, {"city": {"Paris": ["Paname"]}})
    with old.engine.connect() as conn:
        assert conn.execute(text("SELECT synonyms FROM slot_values")).scalar() == '["Paname"]'
    old.dispose()
