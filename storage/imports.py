"""Bulk imports: validated rows into a project, creating missing intents, skipping, refusing or
relabelling texts already there.

:func:`check_import` finds every reason to refuse a whole file before anything is written;
:func:`import_rows` then writes rows in the caller's transaction. A long import calls it once per
chunk, each chunk its own short transaction sharing one batch id: other people's saves get the
write lock between chunks, a row always lands with its labels and its audit event, and the whole
import stays one batch that one undo reverts."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import NamedTuple

from sqlalchemy import select
from sqlalchemy.orm import Session

from storage.errors import StorageError
from storage.faults import fault_point
from storage.projects import create_intent, intents_by_name
from storage.tables import Label, LabelEvent, Utterance
from storage.utterances import NewUtterance, set_labels, update_utterance


class ImportCounts(NamedTuple):
    inserted: int
    updated: int
    skipped: int


ON_EXISTING = ("skip", "relabel", "error")


def _existing(s: Session, project_id: int, texts: Sequence[str]) -> dict[str, int]:
    """Which of ``texts`` the project has already (text -> id)."""
    found: dict[str, int] = {}
    unique = list(dict.fromkeys(texts))
    for start in range(0, len(unique), 900):  # stay under SQLite's bound-variable limit
        part = unique[start : start + 900]
        query = select(Utterance.text, Utterance.id).where(
            Utterance.project_id == project_id, Utterance.text.in_(part)
        )
        found.update((text, uid) for text, uid in s.execute(query))
    return found


def check_import(
    s: Session,
    project_id: int,
    rows: Sequence[NewUtterance],
    *,
    create_missing_intents: bool = True,
    on_existing: str = "error",
) -> None:
    """Refuse (raise) an import that :func:`import_rows` would refuse, without writing: a text
    twice in the rows, a text already in the project when ``on_existing="error"``, a label that
    is not an intent when intents may not be created."""
    if on_existing not in ON_EXISTING:
        raise ValueError(f"unknown on_existing {on_existing!r}")
    seen: set[str] = set()
    for r in rows:  # the unique (project, text) constraint, as a message instead of a crash
        if r.text in seen:
            raise StorageError(f"The utterance {r.text!r} appears twice in what is imported.")
        seen.add(r.text)
    if on_existing == "error":
        already = _existing(s, project_id, [r.text for r in rows])
        if already:
            raise StorageError(f"The utterance {next(iter(already))!r} is already in this project.")
    needed = sorted({name for r in rows for name in r.labels} - set(intents_by_name(s, project_id)))
    if needed and not create_missing_intents:
        raise StorageError(
            f"{len(needed)} label(s) are not intents of this project: {', '.join(needed[:10])}"
        )


def import_rows(
    s: Session,
    project_id: int,
    rows: Sequence[NewUtterance],
    *,
    user_id: int | None = None,
    create_missing_intents: bool = True,
    on_existing: str = "error",
    batch: str | None = None,
) -> ImportCounts:
    """Insert validated rows in the caller's transaction. A text already in the project is
    ``on_existing``: ``"skip"``ped (counted), ``"relabel"``led (its labels and split replaced),
    or an ``"error"``. Raises before the caller commits, so nothing is half-written. Events carry
    ``batch`` (a new id when None), so the chunks of one import are one batch."""
    check_import(
        s, project_id, rows, create_missing_intents=create_missing_intents, on_existing=on_existing
    )
    existing = _existing(s, project_id, [r.text for r in rows])
    skipped = 0
    if on_existing == "skip":
        kept = [r for r in rows if r.text not in existing]
        skipped, rows = len(rows) - len(kept), kept
    known = intents_by_name(s, project_id)
    for name in sorted({name for r in rows for name in r.labels} - set(known)):
        known[name] = create_intent(s, project_id, name)
    batch = batch or str(uuid.uuid4())
    inserted = updated = 0
    new_utts: list[tuple[Utterance, NewUtterance]] = []
    for r in rows:
        if r.text in existing:
            if on_existing == "error":
                raise StorageError(f"The utterance {r.text!r} is already in this project.")
            set_labels(s, project_id, existing[r.text], r.labels, user_id=user_id, batch=batch)
            update_utterance(
                s, project_id, existing[r.text], split=r.split, user_id=user_id, batch=batch
            )
            updated += 1
            continue
        u = Utterance(project_id=project_id, text=r.text, split=r.split, context=r.context)
        s.add(u)
        new_utts.append((u, r))
    s.flush()
    fault_point("import.rows_written")
    for u, r in new_utts:
        for name in dict.fromkeys(r.labels):
            s.add(Label(utterance_id=u.id, intent_id=known[name].id))
        s.add(
            LabelEvent(
                project_id=project_id,
                utterance_id=u.id,
                utterance_text=u.text,
                user_id=user_id,
                batch=batch,
                action="import",
                before=[],
                after=sorted(set(r.labels)),
                split_after=r.split,
            )
        )
        inserted += 1
    s.flush()
    fault_point("import.before_commit")
    return ImportCounts(inserted, updated, skipped)
