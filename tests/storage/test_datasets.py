"""Dataset snapshots: content-addressed and stable."""

from __future__ import annotations

from storage.datasets import content_hash, snapshot, snapshot_rows
from storage.utterances import (
    add_utterance,
)


def test_snapshot_hash_is_stable_and_content_addressed(db, project):
    with db.session() as s:
        a = snapshot(s, project)
        b = snapshot(s, project)
        assert a.id == b.id and len(a.content_hash) == 64
        assert content_hash(snapshot_rows(a)) == a.content_hash
        add_utterance(s, project, "one more", ["refund"])
        assert snapshot(s, project).content_hash != a.content_hash
