"""Import of a project's utterances: validate, write in chunks, say what happened (export:
:mod:`app.services.projects.export`).

The file formats and every rule about their content are :mod:`app.formats`'s (:func:`read_any`
picks the format by suffix and content). A project imported from a platform agent (Dialogflow,
Lex, Watson, LUIS, CLU) keeps that agent's files through :mod:`storage.agents`, so that exporting
the project to the same format writes them back with the project's intents, phrases and
descriptions. A file is validated completely before anything is written; then it is written in
short transactions of :data:`CHUNK_ROWS` rows, so that a long import never keeps others from
saving for long. A file of up to :data:`CHUNK_ROWS` rows lands whole or not at all; a longer one
stopped half-way keeps whole rows, in one audit batch.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from app.access import ItemPolicy, ProjectHandle, open_project, resolve, writing
from app.access.actions import CREATE_PROJECT, IMPORT
from app.access.auth import current_actor, require_acting
from app.formats import AgentSource, kept_title, read_any
from app.serving.compute import new_project_encoder
from storage import guard
from storage.agents import keep_agent
from storage.db import CATALOG, Database, Session
from storage.errors import NotFoundError
from storage.imports import ImportCounts, new_batch, plan_import, write_rows
from storage.names import mapping_note
from storage.projects import create_project, describe_intents
from storage.users import record_event
from storage.utterances import NewUtterance

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
    described: int = 0
    format: str = ""

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
        described = f"; described {self.described} intent(s)" if self.described else ""
        read_as = f"Read as {self.format}. " if self.format else ""
        return (
            f"{read_as}Imported {self.inserted} utterance(s) into {self.project!r}, "
            f"updated {self.updated}{skipped}{created}{described}.{notes}"
        )


# Rows a chunk writes in one transaction. A row, new or relabelled, takes about 0.07 ms to write
# (bench/imports.py, 2 cores): 2,500 rows hold SQLite's write lock for 0.2-0.3 s, under the 0.5 s
# that an import may make a label save wait (4,000 rows held it up to 0.44 s).
CHUNK_ROWS = 2500
# Between two chunks the import lets go of the lock this long. SQLite's busy handler retries a
# waiting writer at most every 100 ms, so a pause a bit longer lets every waiting save in (with
# 10 ms, a save waited 2 s: it kept missing the gaps).
CHUNK_PAUSE_S = 0.12


def _chunks(rows: list[NewUtterance]) -> list[list[NewUtterance]]:
    return [rows[i : i + CHUNK_ROWS] for i in range(0, len(rows), CHUNK_ROWS)] or [[]]


def import_utterances(
    db: Database,
    into: ProjectHandle | str,
    rows: list[NewUtterance],
    *,
    create_missing_intents: bool = True,
    on_existing: str = "skip",
    descriptions: dict[str, str] | None = None,
) -> ImportResult:
    """Write validated rows into a project (``into``: as resolved at the edge, or the name of a
    new project to create, which needs an admin). Texts already in the project are skipped and
    counted (``on_existing="relabel"`` replaces their intents, except on items the acting user
    may not change: :mod:`app.access.policy`; those are left as they are and counted).

    Every row is checked before anything is written. Then the rows are written in chunks of
    :data:`CHUNK_ROWS`, each its own short transaction, so that someone labelling meanwhile waits
    for one chunk, never for the whole import. Up to :data:`CHUNK_ROWS` rows are one transaction
    (all or nothing, the new project with them); a longer import stopped half-way (a crash, a
    kill) keeps the chunks it committed: whole rows, each with its labels and its audit event, and
    they all share the import's one batch id. ``descriptions`` (intent -> text) are set last
    (a described intent not in the project is created when ``create_missing_intents``)."""
    from storage.errors import StorageError

    if isinstance(into, str):  # the first chunk creates it (its name is checked there)
        require_acting(CREATE_PROJECT.role, f"creating the project {into!r}")
        p = None
    else:
        into.require_writable(IMPORT)
        p = into
    with db.session() as s:  # the check reads only: it holds no lock
        plan = plan_import(
            s,
            p.id if p is not None else None,
            rows,
            create_missing_intents=create_missing_intents,
            on_existing=on_existing,
            described=descriptions or (),
        )
    batch = new_batch()
    total = ImportCounts(0, 0, plan.skipped)
    for i, chunk in enumerate(_chunks(plan.rows)):
        if i:
            time.sleep(CHUNK_PAUSE_S)
        try:
            if p is None:  # a new project: made with its first chunk, in one transaction
                with db.write(CATALOG) as s:  # no other project's writer waits for it
                    p = _made(s, str(into))
                    guard.install(s, ItemPolicy(p.actor.id, p.role))
                    counts = _write(s, p, chunk, batch, create_missing_intents, on_existing)
            else:
                with writing(db, p) as s:
                    resolve(s, p.id, p.actor, need=IMPORT.role)  # deleted, or left, meanwhile?
                    counts = _write(s, p, chunk, batch, create_missing_intents, on_existing)
        except StorageError as exc:
            if not i:
                raise
            # Someone changed the project between two chunks (deleted it, an intent, a row).
            written = total.inserted + total.updated
            raise StorageError(
                f"{exc} The import stopped after {written} of {len(plan.rows)} row(s); "
                "import the file again to bring the rest."
            ) from exc
        total = ImportCounts(
            total.inserted + counts.inserted,
            total.updated + counts.updated,
            total.skipped + counts.skipped,
            total.intents_created + counts.intents_created,
            total.protected + counts.protected,
        )
    assert p is not None
    if len(plan.rows) > CHUNK_ROWS:
        logger.info(
            "imported %d row(s) into %r in chunks of %d", len(plan.rows), p.name, CHUNK_ROWS
        )
    created = set(total.intents_created)
    notes = [note] if (note := mapping_note(dict(plan.mapped))) else []
    if total.protected:
        notes.append(
            f"Left {total.protected} utterance(s) as they are: you may not change them now "
            "(given to annotators, waiting for review, or accepted from their answers)."
        )
    left_out: list[str] = []
    if descriptions:
        with writing(db, p) as s:
            made_intents, left_out = describe_intents(
                s, p.id, descriptions, create_missing=create_missing_intents
            )
        created.update(made_intents)
        if left_out:
            notes.append(
                f"Left out the description(s) of {len(left_out)} intent(s) not in the project: "
                f"{', '.join(left_out[:8])}."
            )
    return ImportResult(
        p.name,
        total.inserted,
        total.updated,
        sorted(created),
        notes,
        skipped=total.skipped,
        described=len(descriptions or {}) - len(left_out),
    )


def _made(s: Session, name: str) -> ProjectHandle:
    """The new project ``name``, created now; or the one another import (or person) created
    meanwhile under that name, if the acting user may change it (two imports into one new name
    at once both land)."""
    try:
        return resolve(s, name, need=IMPORT.role)
    except NotFoundError:
        made = resolve(s, create_project(s, name, base_encoder=new_project_encoder()).id)
        who = current_actor().name
        record_event(s, "project_created", who, actor=who, detail=f"{made.name!r} by an import")
        return made


def destination(db: Database, name: str) -> ProjectHandle | str:
    """Where an import into the project named ``name`` goes: that project, as the acting user
    may change it, or (there is no such project for them) ``name``, a new project the import
    creates (:func:`import_utterances`)."""
    try:
        return open_project(db, name, need=IMPORT.role)
    except NotFoundError:
        return name


def _write(
    s: Session,
    p: ProjectHandle,
    chunk: list[NewUtterance],
    batch: str,
    create_missing_intents: bool,
    on_existing: str,
) -> ImportCounts:
    return write_rows(
        s,
        p.id,
        chunk,
        batch=batch,
        user_id=p.actor.id,
        create_missing_intents=create_missing_intents,
        on_existing=on_existing,
    )


def import_file(
    db: Database,
    into: ProjectHandle | str,
    path: str | Path,
    *,
    language: str | None = None,
    **kwargs: bool | str | int | None,
) -> ImportResult:
    """Read and import a CSV/JSONL/Rasa YAML file, a folder or .zip of ``intent.txt`` files, or a
    platform agent (whose files the project keeps for its export:
    :func:`app.services.projects.export.export_project`), in ``language`` (Lex: a locale id)
    instead of the agent's default, into ``into`` (a project, or the name of a new one:
    :func:`import_utterances`).

    Raises:
        FormatError: a bad file (nothing written).
    """
    from app.services.design.slots import check_slot_data, import_slot_data

    parsed = read_any(path, language=language)
    if parsed.rows or parsed.descriptions:
        check_slot_data(parsed.slots)  # a bad annotation refuses the file before any row lands
        result = import_utterances(
            db,
            into,
            parsed.rows,
            descriptions=parsed.descriptions,
            **kwargs,  # type: ignore[arg-type]
        )
    elif isinstance(into, str):  # a slot book file: values and templates only
        raise NotFoundError(f"No project {into!r}: a slot book file goes into an existing project.")
    else:
        result = ImportResult(into.name, 0, 0, [])
    result.notes.extend(parsed.notes)
    p = into if not isinstance(into, str) else None
    if parsed.slots or parsed.agent is not None:
        p = p or open_project(db, result.project)
    if parsed.slots and p is not None:
        result.notes.extend(import_slot_data(db, p, parsed.slots))
    if parsed.agent is not None and p is not None:
        result.notes.append(_keep_agent(db, p, parsed.agent))
    return replace(result, format=parsed.format)


def _keep_agent(db: Database, p: ProjectHandle, agent: AgentSource) -> str:
    """Keep an imported agent's files with the project; a note saying so."""
    with writing(db, p) as s:
        before = keep_agent(s, p.id, agent.format, agent.content, agent.language)
    title = kept_title(agent.format)
    replaced = f" (it replaces the {kept_title(before)} kept before)" if before else ""
    return (
        f"Kept the rest of the {title} (what the app does not model){replaced}: an export to "
        "that format writes it back unchanged."
    )
