"""Import and export of a project's utterances: validate, write in one transaction, say what happened.

The file formats and every rule about their content are :mod:`app.formats`'s (:func:`read_any`,
:func:`write_any` pick the format by suffix). A file is validated completely before anything is
written, and written in one transaction: either every row lands or none does.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

from app.auth import current_user_id
from app.context import AppContext
from app.formats import read_any, write_any
from storage.imports import import_rows
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
    """Write validated rows into a (new or existing) project in one transaction. Texts already in
    the project are skipped and counted (``on_existing="relabel"`` replaces their intents)."""
    from storage.errors import NotFoundError
    from storage.projects import ensure_writable, intents_by_name

    with ctx.db.write() as s:
        try:
            proj = get_project(s, project)
        except NotFoundError:
            if not create_project_if_missing:
                raise
            proj = create_project(s, project)
        ensure_writable(proj)
        before = set(intents_by_name(s, proj.id))
        counts = import_rows(
            s,
            proj.id,
            rows,
            user_id=user_id if user_id is not None else current_user_id(),
            create_missing_intents=create_missing_intents,
            on_existing=on_existing,
        )
        created = sorted(set(intents_by_name(s, proj.id)) - before)
        name = proj.name
    return ImportResult(name, counts.inserted, counts.updated, created, skipped=counts.skipped)


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
