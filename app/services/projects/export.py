"""Export of a project: its utterances, intents' descriptions and slot book written to a file in
the format asked (a file format by suffix, or a platform agent's), for the command line, REST and
the Data tab's download.

A project imported from a platform agent (Dialogflow, Lex, Watson, LUIS, CLU) kept that agent's
files (:mod:`storage.agents`, :mod:`app.services.projects.io`): exporting it to the same format
writes them back with the project's intents, phrases and descriptions. Every export is the
:data:`app.access.actions.EXPORT` action, checked here whatever door asked; an export of the
project's rows is recorded in the security log.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from app.access import ProjectHandle
from app.access.actions import EXPORT
from app.formats import AgentSource, dump_slot_book, export_formats, kept_title, write_any
from app.services.projects import accounts as security
from app.serving.state import ServingState
from storage.agents import kept_agent
from storage.db import Database
from storage.projects import list_intents
from storage.utterances import NewUtterance, list_utterances


def export_rows(db: Database, p: ProjectHandle) -> list[NewUtterance]:
    """Every utterance of a project as plain rows."""
    with db.session() as s:
        return [
            NewUtterance(u.text, u.labels, u.split, u.context) for u in list_utterances(s, p.id)
        ]


@dataclass(frozen=True)
class ExportResult:
    """What an export wrote: rows, the format used, notes on what was left out or renamed."""

    rows: int
    format: str
    notes: list[str] = field(default_factory=list)

    def message(self, path: str | Path) -> str:
        notes = "".join(f" Note: {n}" for n in self.notes)
        return f"Exported {self.rows} utterance(s) to {path} as {self.format}.{notes}"


_SUFFIX_FORMATS = {
    ".jsonl": "JSONL",
    ".ndjson": "JSONL",
    ".yml": "Rasa NLU YAML",
    ".yaml": "Rasa NLU YAML",
    ".zip": "zip of intent files",
    "": "folder of intent files",
}


def export_project(
    db: Database,
    p: ProjectHandle,
    path: str | Path,
    *,
    format: str | None = None,
    follow_agent: bool = True,
) -> ExportResult:
    """Export a project. ``format`` names an agent format (``dialogflow-es``, ``lex-v2``, ...;
    see :data:`app.formats.AGENT_FORMATS`); without it the path's suffix decides (see
    :func:`app.formats.write_any`), except that a project imported from an agent is written as
    that agent when the suffix fits it (``.zip`` or ``.json``; ``follow_agent=False``: by the
    suffix only, a ``.zip`` of intent files). An agent export starts from the agent the project
    was imported from, when it is of that format.

    Raises:
        ValueError: an unknown agent format, or a ``.json`` path for a project that names none.
        PermissionError: the caller may not export (:data:`app.access.actions.EXPORT`).
    """
    from app.services.design.slots import export_slot_data

    p.require_action(EXPORT)  # whatever door asked: the data leaves the app here
    rows = export_rows(db, p)
    with db.session() as s:
        described = {i.name: i.description for i in list_intents(s, p.id)}
        kept = kept_agent(s, p.id)
        name = p.name
    suffix = Path(path).suffix.lower()
    if follow_agent and format is None and kept and kept.format in export_formats(suffix):
        format = kept.format
    source = AgentSource(*kept) if kept is not None else None
    slots = export_slot_data(db, p)
    notes = write_any(rows, path, described, slots, format=format, kept=source, name=name)
    label = _SUFFIX_FORMATS.get(suffix, "CSV") if format is None else kept_title(format)
    security.record(db, "exported", f"{p.name!r} as {label}, {len(rows)} rows", who=p.actor)
    return ExportResult(len(rows), label, notes)


def export_slot_book(db: Database, p: ProjectHandle, path: str | Path) -> int:
    """Write the project's slot book and templates as a slot book file (YAML, see
    :mod:`app.formats.slot_book`); returns the number of templates."""
    from app.services.design.slots import export_slot_data

    p.require_action(EXPORT)
    data = export_slot_data(db, p)
    out = Path(path)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(dump_slot_book(data), encoding="utf-8")
    tmp.replace(out)
    return sum(len(t) for t in data.templates.values())


FILE_FORMATS = ("csv", "jsonl", "yml", "zip", "slots.yml")  # besides the agent formats' names


def export_download(serving_state: ServingState, p: ProjectHandle, fmt: str) -> tuple[Path, str]:
    """Export a project for download in ``fmt``: a file format of :data:`FILE_FORMATS` (by its
    suffix; ``slots.yml``: the slot book and templates) or an agent format's name (written into
    the agent the project was imported from, when it is of that format). Returns the file
    (:func:`app.services.projects.downloads.download_path`: swept after a day) and what was written.

    Raises:
        ValueError: an unknown format. PermissionError: the caller may not export.
    """
    from app.formats import AGENT_FORMATS
    from app.services.projects.downloads import download_path

    p.require_action(EXPORT)  # before any file is made for it
    agents = {f.name: f for f in AGENT_FORMATS}
    if fmt not in agents and fmt not in FILE_FORMATS:
        known = ", ".join([*FILE_FORMATS, *agents])
        raise ValueError(f"Unknown export format {fmt!r}: use one of {known}.")
    suffix = (".zip" if agents[fmt].container == "zip" else ".json") if fmt in agents else f".{fmt}"
    out = download_path(
        serving_state.settings, f"{p.name.replace('/', '_').replace(' ', '_')}{suffix}", p.id
    )
    if fmt == "slots.yml":
        n = export_slot_book(serving_state.db, p, out)
        return out, f"Exported the slot book and {n} template(s)."
    res = export_project(
        serving_state.db, p, out, format=fmt if fmt in agents else None, follow_agent=False
    )
    return out, res.message(out.name)
