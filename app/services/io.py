"""Import and export of a project's utterances: validate, write in chunks, say what happened.

The file formats and every rule about their content are :mod:`app.formats`'s (:func:`read_any`,
:func:`write_any` pick the format by suffix). A file is validated completely before anything is
written, then written in short chunks (see :func:`import_utterances`).
"""

from __future__ import annotations

import logging
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from app.auth import current_user_id
from app.context import AppContext
from app.formats import read_any, write_any
from storage.faults import fault_point
from storage.imports import check_import, import_rows
from storage.projects import create_project, get_project
from storage.utterances import NewUtterance, list_utterances

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ImportResult:
    """What an import did: rows inserted and updated, intents created, notes from the reader."""

    project: str
    inserted: int
    updated: int
    intents_created: list[str]
    notes: list[str] = field(default_factory=list)
    skipped: int = 0

    def message(self) -> str:
        names = self.intents_created
        more = f" and {len(names) - 8} more" if len(names) > 8 else ""
        created = f"; {len(names)} new intent(s): {', '.join(names[:8])}{more}" if names else ""
        skipped = (
            f"; skipped {self.skipped} already in the project (import with relabel to replace "
            "their intents)"
            if self.skipped
            else ""
        )
        notes = "".join(f" Note: {n}" for n in self.notes)
        return (
            f"Imported {self.inserted} utterance(s) into {self.project!r}, "
            f"updated {self.updated}{skipped}{created}.{notes}"
        )


IMPORT_CHUNK = 1000  # rows per transaction: ~0.2 s of SQLite's write lock on 2 cores
# The pause between chunks: a writer waiting for the lock retries after SQLite's busy handler
# sleeps (up to 25-50 ms by then); without a pause the import takes the lock straight back and
# starves it.
IMPORT_PAUSE = 0.06


def import_utterances(
    ctx: AppContext,
    project: str,
    rows: list[NewUtterance],
    *,
    create_project_if_missing: bool = True,
    create_missing_intents: bool = True,
    on_existing: str = "skip",
    user_id: int | None = None,
) -> ImportResult:
    """Write validated rows into a (new or existing) project. Texts already in the project are
    skipped and counted (``on_existing="relabel"`` replaces their intents).

    Everything that could refuse the file is checked before the first write. The rows are then
    written :data:`IMPORT_CHUNK` at a time, each chunk its own transaction, so a long import never
    holds the write lock for more than a fraction of a second: people labelling meanwhile wait
    at most one chunk. The chunks share one batch id: the whole import is one undo. A file of one
    chunk is all or nothing; a crash in a longer one leaves whole rows (each with its labels and
    event) of the chunks already committed, and the database intact."""
    from storage.errors import NotFoundError
    from storage.projects import ensure_writable, intents_by_name

    who = user_id if user_id is not None else current_user_id()
    options: dict[str, Any] = {
        "create_missing_intents": create_missing_intents,
        "on_existing": on_existing,
    }
    with ctx.db.write() as s:
        try:
            proj = get_project(s, project)
        except NotFoundError:
            if not create_project_if_missing:
                raise
            proj = create_project(s, project)
        ensure_writable(proj)
        pid, name = proj.id, proj.name
        before = set(intents_by_name(s, pid))
        check_import(s, pid, rows, **options)
    batch = str(uuid.uuid4())
    inserted = updated = skipped = 0
    for start in range(0, max(len(rows), 1), IMPORT_CHUNK):
        with ctx.db.write() as s:
            counts = import_rows(
                s, pid, rows[start : start + IMPORT_CHUNK], user_id=who, batch=batch, **options
            )
        inserted, updated, skipped = (
            inserted + counts.inserted,
            updated + counts.updated,
            skipped + counts.skipped,
        )
        fault_point("import.chunk_committed")
        if start + IMPORT_CHUNK < len(rows):
            time.sleep(IMPORT_PAUSE)
    with ctx.db.session() as s:
        created = sorted(set(intents_by_name(s, pid)) - before)
    return ImportResult(name, inserted, updated, created, skipped=skipped)


def import_file(
    ctx: AppContext, project: str, path: str | Path, **kwargs: bool | str | int | None
) -> ImportResult:
    """Read and import a CSV/JSONL/Rasa YAML file, or a folder or .zip of ``intent.txt`` files.

    Raises:
        FormatError: a bad file (nothing written).
    """
    parsed = read_any(path)
    result = import_utterances(ctx, project, parsed.rows, **kwargs)  # type: ignore[arg-type]
    result.notes.extend(parsed.notes)
    return result


def export_rows(ctx: AppContext, project: str) -> list[NewUtterance]:
    """Every utterance of a project as plain rows."""
    with ctx.db.session() as s:
        proj = get_project(s, project)
        return [
            NewUtterance(u.text, u.labels, u.split, u.context) for u in list_utterances(s, proj.id)
        ]


def export_file(ctx: AppContext, project: str, path: str | Path) -> int:
    """Export a project by the path's suffix (see :func:`app.formats.write_any`): .csv, .jsonl,
    Rasa .yml/.yaml, .zip of ``intent.txt`` files, or (no suffix) a folder of them. Returns the
    number of rows."""
    rows = export_rows(ctx, project)
    write_any(rows, path)
    return len(rows)
