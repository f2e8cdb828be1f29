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
