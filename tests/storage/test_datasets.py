"""Dataset snapshots: content-addressed and stable."""

from __future__ import annotations

import hashlib
import json

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


def test_a_snapshot_keeps_contexts_and_a_project_without_them_hashes_as_before(db, project):
    with db.session() as s:
        plain = snapshot(s, project)
        rows = snapshot_rows(plain)
        assert all(r.context == "" for r in rows)
        # rows without context hash as they did before contexts were kept: [text, labels, split]
        three = sorted([r.text, list(r.labels), r.split] for r in rows)
        three.sort(key=lambda r: (r[2], r[0]))
        canonical = json.dumps(three, ensure_ascii=False, separators=(",", ":")).encode()
        assert plain.content_hash == hashlib.sha256(canonical).hexdigest()
        add_utterance(s, project, "yes please", ["refund"], context="Shall I refund it?")
        with_context = snapshot(s, project)
        kept = {r.text: r.context for r in snapshot_rows(with_context)}
        assert kept["yes please"] == "Shall I refund it?"
        assert content_hash(snapshot_rows(with_context)) == with_context.content_hash
