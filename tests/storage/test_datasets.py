"""Dataset snapshots: content-addressed and stable."""

from __future__ import annotations

import hashlib
import json
import sqlite3

import pytest

from storage import datasets
from storage.datasets import content_hash, snapshot, snapshot_rows
from storage.errors import BusyError
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


def test_the_current_version_waits_for_a_writer_instead_of_being_refused(db, project, monkeypatch):
    """A report made just after a label failed with "The database is busy": its snapshot read the
    utterances in a plain transaction, a writer committed, and SQLite refused the snapshot's insert
    at once (SQLITE_BUSY_SNAPSHOT). :func:`storage.datasets.current` holds the write lock from its
    start: the other writer waits instead. A label lands between the read and the write here."""
    if db.engine.dialect.name != "sqlite":
        pytest.skip("SQLite's snapshot isolation; PostgreSQL's writers wait on their locks")
    with db.session() as s:
        add_utterance(s, project, "where is my refund", ["refund"])  # content no version has yet
    path = db.engine.url.database
    landed: list[bool] = []
    real_hash = datasets.content_hash

    def a_label_meanwhile(rows):
        con = sqlite3.connect(path, timeout=0.2, isolation_level=None)
        try:
            con.execute("BEGIN IMMEDIATE")
            con.execute(
                "UPDATE utterances SET text = text WHERE id = (SELECT min(id) FROM utterances)"
            )
            con.execute("COMMIT")
            landed.append(True)
        except sqlite3.OperationalError:  # the write lock is held: it waits its turn
            landed.append(False)
        finally:
            con.close()
        return real_hash(rows)

    monkeypatch.setattr(datasets, "content_hash", a_label_meanwhile)
    with pytest.raises(BusyError), db.session() as s:  # how the report and the bundle read it
        datasets.snapshot(s, project)
    assert landed == [True]

    landed.clear()
    digest, rows = datasets.current(db, project)
    assert landed == [False]
    assert len(digest) == 64 and "where is my refund" in {r.text for r in rows}
