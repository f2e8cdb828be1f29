"""A small project shared by the storage tests."""

from __future__ import annotations

import pytest

from storage.projects import create_project
from storage.utterances import add_utterance


@pytest.fixture
def project(db):
    with db.session() as s:
        p = create_project(s, "shop")
        add_utterance(s, p.id, "where is my parcel", ["track_order"])
        add_utterance(s, p.id, "cancel it please", ["cancel_order"])
        add_utterance(s, p.id, "cancel and refund", ["cancel_order", "refund"])
        add_utterance(s, p.id, "hello there", [], split="unlabelled")
        return p.id
