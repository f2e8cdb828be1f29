"""Intents of a project: merge, delete and rename, each undoable as one batch."""

from __future__ import annotations

import pytest

from storage import StorageError
from storage.audit import undo_last
from storage.projects import (
    count_intents,
    create_intent,
    delete_intent,
    list_intents,
    merge_intents,
    rename_intent,
)
from storage.utterances import list_utterances


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


def test_the_prediction_paths_project_lookup_answers_like_get_project(db, project):
    from storage.errors import NotFoundError
    from storage.projects import create_project, get_project, project_id

    with db.session() as s:
        create_project(s, "2024")  # a name made of digits is a name first
        named_2024 = get_project(s, "2024").id
    with db.reading() as c:
        assert project_id(c, "shop") == project_id(c, project) == project
        assert project_id(c, str(project)) == project  # an id typed as text, as before
        assert project_id(c, "2024") == named_2024
        for missing in ("nope", project + 100):
            with pytest.raises(NotFoundError):
                project_id(c, missing)


def test_the_intents_counted_are_those_listed_less_the_one_excluded(db, project):
    """The summary line's count (after every key): one query, the same number list_intents gives."""
    with db.session() as s:
        create_intent(s, project, "out_of_scope")
        listed = [i.name for i in list_intents(s, project)]
        assert count_intents(s, project) == len(listed) == 4
        assert count_intents(s, project, excluding="out_of_scope") == 3
        delete_intent(s, project, "refund")
        assert count_intents(s, project, excluding="out_of_scope") == 2
