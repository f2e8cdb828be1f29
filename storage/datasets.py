"""Immutable dataset snapshots identified by a content hash.

A row is ``[text, labels, split]``, with its ``context`` (the turn before it) as a fourth element
only when it has one, so the hash of a project without contexts is what it always was."""

from __future__ import annotations

import gzip
import hashlib
import json
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session

from storage.db import Database, WriteLock
from storage.tables import DatasetVersion
from storage.utterances import UtteranceRow, list_utterances


@dataclass(frozen=True)
class SnapshotRow:
    text: str
    labels: tuple[str, ...]
    split: str
    context: str = ""


def _canonical(rows: list[SnapshotRow]) -> bytes:
    ordered = sorted(rows, key=lambda r: (r.split, r.text))
    payload = [
        [r.text, list(r.labels), r.split, *([r.context] if r.context else [])] for r in ordered
    ]
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode()


def content_hash(rows: list[SnapshotRow]) -> str:
    """sha256 of the canonical JSON of (text, sorted labels, split[, context]) rows,
    order-independent."""
    return hashlib.sha256(_canonical(rows)).hexdigest()


def snapshot(s: Session, project_id: int) -> DatasetVersion:
    """Snapshot the project's utterances; the same content returns the same DatasetVersion."""
    rows = [
        SnapshotRow(u.text, u.labels, u.split, u.context) for u in list_utterances(s, project_id)
    ]
    digest = content_hash(rows)
    existing = s.scalar(
        select(DatasetVersion).where(
            DatasetVersion.project_id == project_id, DatasetVersion.content_hash == digest
        )
    )
    if existing is not None:
        return existing
    dv = DatasetVersion(
        project_id=project_id,
        content_hash=digest,
        n_utterances=len(rows),
        n_labelled=sum(1 for r in rows if r.labels),
        n_intents=len({name for r in rows for name in r.labels}),
        snapshot=gzip.compress(_canonical(rows), mtime=0),
    )
    s.add(dv)
    s.flush()
    return dv


def current(db: Database, project_id: int) -> tuple[str, list[UtteranceRow]]:
    """The project's dataset version's hash and its utterances, read in one transaction that holds
    the project's write lock from its start: :func:`snapshot` writes the version when the content
    is new, and on SQLite a transaction that reads and only then writes is refused at once
    (SQLITE_BUSY_SNAPSHOT, no wait) when another writer committed in between, as a label does
    while a report or a bundle is made."""
    with db.write(WriteLock.project(project_id)) as s:
        rows = list_utterances(s, project_id)
        return snapshot(s, project_id).content_hash, rows


def snapshot_rows(dv: DatasetVersion) -> list[SnapshotRow]:
    payload = json.loads(gzip.decompress(dv.snapshot))
    return [
        SnapshotRow(text, tuple(labels), split, *rest) for text, labels, split, *rest in payload
    ]


def version_rows(s: Session, dataset_version_id: int) -> list[SnapshotRow]:
    """The rows of a dataset version (what a model version was trained on); none when it is
    gone."""
    dv = s.get(DatasetVersion, dataset_version_id)
    return snapshot_rows(dv) if dv is not None else []
