"""Utterance files in the formats designers already use, and the one place that picks the format.

:func:`read_any` picks the format by the file suffix and by what the file holds: ``.csv`` (also
``.tsv``, ``.txt`` and no suffix), ``.jsonl``/``.ndjson``, Rasa ``.yml``/``.yaml``, a ``.zip`` or
folder of intent files, and the platform agents of :mod:`app.formats.agents` (a zip or folder of
Dialogflow ES or CX or Lex V2 files; a ``.json`` of LUIS, CLU, Watson Assistant or Dialogflow
CX), recognised by their content (a zip is read as one whatever its suffix). :func:`write_any` writes by
the suffix, or the agent format named. Pure functions over plain rows
(:class:`storage.utterances.NewUtterance`, aliased :data:`Row`): nothing here touches a database.
A file is validated completely first; any problem raises :class:`FormatError` and no row is
returned.

Example:
    >>> read_any(b"text,label\\nhi,greet\\n", suffix=".csv").rows
    [NewUtterance(text='hi', labels=('greet',), split='train', context='')]
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import Path

from app.formats.agents import (
    AGENT_FORMATS,
    agent_format,
    read_agent_files,
    read_agent_json,
    write_agent,
)
from app.formats.agents.base import load_json
from app.formats.common import (
    MAX_FILE_BYTES,
    AgentSource,
    FormatError,
    ParsedFile,
    Row,
    check_size,
    decode,
    merge_repeats,
)
from app.formats.intent_files import (
    device_files,
    dump_intent_files,
    folder_files,
    parse_intent_files,
    parse_zipped_intent_files,
    read_intent_folder,
    write_intent_folder,
    write_intent_zip,
    zip_files_of,
)
from app.formats.left_out import (
    AGENTS,
    INTENT_FILES,
    RASA,
    RASA_KEPT,
    TABULAR,
    Carries,
    kept_left_out,
    left_out,
)
from app.formats.rasa import dump_rasa_yaml, parse_rasa_yaml
from app.formats.rasa_kept import write_into
from app.formats.rasa_write import write_rasa
from app.formats.slot_book import dump_slot_book, is_slot_book, parse_slot_book
from app.formats.tabular import (
    from_spreadsheet_safe,
    parse_csv,
    parse_jsonl,
    read_csv,
    read_jsonl,
    spreadsheet_safe,
)
from app.formats.tabular_write import csv_line, write_csv, write_jsonl
from core.slots import SlotData

__all__ = [
    "AGENT_FORMATS",
    "MAX_FILE_BYTES",
    "AgentSource",
    "FormatError",
    "ParsedFile",
    "Row",
    "agent_format",
    "csv_line",
    "dump_intent_files",
    "dump_rasa_yaml",
    "dump_slot_book",
    "export_formats",
    "from_spreadsheet_safe",
    "kept_title",
    "parse_csv",
    "parse_intent_files",
    "parse_jsonl",
    "parse_rasa_yaml",
    "parse_slot_book",
    "read_any",
    "read_csv",
    "read_intent_folder",
    "read_jsonl",
    "spreadsheet_safe",
    "write_any",
    "write_csv",
    "write_jsonl",
]


RASA_FILE = RASA_KEPT  # the kept file's format (AgentSource.format) of a project from Rasa
RASA_TITLE = "Rasa NLU file"


def _read_yaml(data: bytes) -> ParsedFile:
    """Rasa NLU YAML (kept with the project, so that an export writes back into it), or a slot
    book file (``slot_book:`` / ``templates:``, no ``nlu:``)."""
    if is_slot_book(decode(data)):
        return replace(parse_slot_book(data), format="slot book")
    kept = AgentSource(RASA_FILE, data)
    return replace(parse_rasa_yaml(data), format="Rasa NLU YAML", agent=kept)


def kept_title(format: str) -> str:
    """What a kept file is, in a note: an agent format's title, or the Rasa file's."""
    return RASA_TITLE if format == RASA_FILE else agent_format(format).title


def _agent_or(
    files: dict[str, bytes],
    language: str | None,
    intent_files: Callable[[dict[str, bytes]], ParsedFile],
    what: str,
) -> ParsedFile:
    """A zip's or a folder's ``files`` as the platform agent they are, else as intent ``.txt``
    files (``intent_files`` reads them, the format named ``what``)."""
    agent = read_agent_files(files, language=language)
    return agent if agent is not None else replace(intent_files(files), format=what)


def _read_zip(data: bytes, language: str | None = None) -> ParsedFile:
    """A platform agent's zip, else a zip of intent ``.txt`` files."""
    return _agent_or(zip_files_of(data), language, parse_zipped_intent_files, "zip of intent files")


def _read_folder(path: Path, language: str | None = None) -> ParsedFile:
    return _agent_or(folder_files(path), language, parse_intent_files, "folder of intent files")


_JSON_AGENTS = ", ".join(f.title for f in AGENT_FORMATS if f.container == "json")


def _read_json(data: bytes, language: str | None = None) -> ParsedFile:
    parsed = read_agent_json(data, language=language)
    if parsed is None:
        raise FormatError(
            f"This JSON file is not an agent export this app reads ({_JSON_AGENTS}); "
            "for one utterance per line use .jsonl."
        )
    return parsed


def _tabular(reader: Callable[[bytes], ParsedFile], label: str) -> Callable[[bytes], ParsedFile]:
    return lambda data: replace(reader(data), format=label)


_READERS: dict[str, Callable[[bytes], ParsedFile]] = {
    ".csv": _tabular(read_csv, "CSV"),
    ".tsv": _tabular(read_csv, "CSV"),
    ".txt": _tabular(read_csv, "CSV"),
    "": _tabular(read_csv, "CSV"),
    ".jsonl": _tabular(read_jsonl, "JSONL"),
    ".ndjson": _tabular(read_jsonl, "JSONL"),
    ".yml": _read_yaml,
    ".yaml": _read_yaml,
    ".zip": _read_zip,
    ".json": _read_json,
}
_ZIP_MAGIC = b"PK\x03\x04"


def _is_json_agent(data: bytes) -> bool:
    """Whether a file is one JSON object of an agent format (not JSON at all: False)."""
    if data.lstrip(b"\xef\xbb\xbf \t\r\n")[:1] != b"{":
        return False
    try:
        doc = load_json(data, "The file")
    except FormatError:
        return False
    return any(f.container == "json" and f.detect(doc) for f in AGENT_FORMATS)


def _pick(data: bytes, kind: str, language: str | None) -> Callable[[bytes], ParsedFile] | None:
    """The reader for a file, by its content first (a zip is a zip whatever its suffix; a JSON
    agent named ``.txt`` or without a suffix is the agent), then by its suffix."""
    if data.startswith(_ZIP_MAGIC) and kind not in (".yml", ".yaml"):
        return lambda d: _read_zip(d, language)
    if kind == ".json" or (kind in ("", ".txt") and _is_json_agent(data)):
        return lambda d: _read_json(d, language)
    return _READERS.get(kind)


def read_any(
    source: str | Path | bytes, *, suffix: str | None = None, language: str | None = None
) -> ParsedFile:
    """Read and validate a file of utterances, picking the format by its suffix and content
    (``ParsedFile.format`` says which was used).

    Args:
        source: a file or folder path, or a file's bytes.
        suffix: the format of bytes (``".csv"``); for a path, overrides the path's suffix.
        language: for a platform agent, the language to read (Lex: a locale id such as
            ``de_DE``) instead of the agent's default; other files have one language.

    Raises:
        FormatError: an unsupported suffix, a file over 25 MB (refused before reading), an
            agent without the ``language`` asked for, or any problem in the file. Nothing is
            returned then.
    """
    path = None if isinstance(source, bytes) else Path(source)
    if path is not None and path.is_dir():
        parsed = _read_folder(path, language)  # one row per text already (same text = multi-label)
        return _language_said(parsed, language)
    own_suffix = "" if path is None else path.suffix
    kind = (suffix if suffix is not None else own_suffix).lower()
    if path is not None:
        if kind not in _READERS:
            raise _unsupported(kind)
        check_size(path.stat().st_size)
        data = path.read_bytes()
    else:
        assert isinstance(source, bytes)
        data = source
    reader = _pick(data, kind, language)
    if reader is None:
        raise _unsupported(kind)
    parsed = _language_said(reader(data), language)
    if not parsed.rows:  # a slot book file: no utterances
        return parsed
    rows, notes = merge_repeats(parsed.rows)
    return replace(parsed, rows=rows, notes=[*parsed.notes, *notes])


def _language_said(parsed: ParsedFile, language: str | None) -> ParsedFile:
    """A note when a language was asked of a file that is no agent (it has one language)."""
    if not language or (parsed.agent is not None and parsed.agent.format != RASA_FILE):
        return parsed
    note = f"The language {language!r} applies to agent exports; this {parsed.format} was read."
    return replace(parsed, notes=[*parsed.notes, note])


def _unsupported(kind: str) -> FormatError:
    return FormatError(
        f"Unsupported file type {kind!r}: use .csv, .jsonl, Rasa .yml, a folder / .zip of "
        "intent_name.txt files, or an agent export (.zip or .json)."
    )


Descriptions = dict[str, str] | None
# A format's writer: (the file's bytes, notes on what it wrote another way).
Writer = Callable[[list[Row], dict[str, str], SlotData], tuple[bytes, list[str]]]


def _rasa(
    rows: list[Row], descriptions: dict[str, str], slots: SlotData, kept: bytes | None = None
) -> tuple[bytes, list[str]]:
    """A fresh Rasa file, or the project written back into the Rasa file it came from."""
    if kept is not None:
        text, notes = write_into(kept, rows, descriptions, slots)
    else:
        text, notes = write_rasa(rows, descriptions, slots)
    return text.encode("utf-8"), notes


def _jsonl(
    rows: list[Row], descriptions: dict[str, str], slots: SlotData
) -> tuple[bytes, list[str]]:
    return write_jsonl(rows, descriptions, entities=slots.entities).encode("utf-8"), []


def _csv(rows: list[Row], descriptions: dict[str, str], slots: SlotData) -> tuple[bytes, list[str]]:
    return write_csv(rows, descriptions, entities=slots.entities).encode("utf-8"), []


def _zip(rows: list[Row], _: dict[str, str], __: SlotData) -> tuple[bytes, list[str]]:
    return write_intent_zip(rows), device_files(rows)


_WRITERS: dict[str, tuple[Carries, Writer]] = {
    ".zip": (INTENT_FILES, _zip),
    ".yml": (RASA, _rasa),
    ".yaml": (RASA, _rasa),
    ".jsonl": (TABULAR, _jsonl),
    ".ndjson": (TABULAR, _jsonl),
}


def export_formats(suffix: str) -> list[str]:
    """The agent formats a file with this suffix can hold (``.zip``: Dialogflow ES and CX, Lex;
    ``.json``: LUIS, CLU, Watson, Dialogflow CX)."""
    container = {".zip": "zip", ".json": "json"}.get(suffix.lower())
    return [f.name for f in AGENT_FORMATS if f.container == container]


def write_any(
    rows: Iterable[Row],
    path: str | Path,
    descriptions: Descriptions = None,
    slots: SlotData | None = None,
    *,
    format: str | None = None,
    kept: AgentSource | None = None,
    name: str = "intent-studio",
) -> list[str]:
    """Write rows in the format the path's suffix names: ``.jsonl``, Rasa ``.yml``/``.yaml``, a
    ``.zip`` of intent files, no suffix for a folder of them, CSV for anything else; or, with
    ``format``, the agent format of that name (see :func:`app.formats.agents.write_agent`:
    ``descriptions`` then lists every intent, ``kept`` is the agent imported). Returns notes on
    what was left out or renamed.

    A file is written to a temporary name and renamed, so a failed write leaves no half file.
    Rasa and intent files leave unlabelled rows out. Intent ``descriptions`` go in a
    ``description`` column (CSV, JSONL) or the intent item's ``metadata`` (Rasa); intent files
    have no place for them. Rasa files carry ``slots`` (entity markup, ``lookup:`` tables and
    ``synonym:`` maps; written back into the Rasa file the project came from, ``kept``), CSV and
    JSONL the entity annotations (``entities``), the platform agents the annotations and entity
    types each has a place for (:mod:`app.formats.agents.entities`). What a format has no place
    for is named in the notes (:func:`app.formats.left_out.left_out` and each agent format's).

    Raises:
        ValueError: an unknown agent format, a path whose suffix is not the agent's (``.zip``
            or ``.json``), or a ``.json`` path without an agent format.
    """
    p = Path(path)
    suffix = p.suffix.lower()
    rows = list(rows)
    slots = slots or SlotData()
    described = descriptions or {}
    if format is not None:
        fmt = agent_format(format)
        if suffix != f".{fmt.container}":
            raise ValueError(
                f"A {fmt.title} is written as a .{fmt.container} file, not {p.name!r}."
            )
        payload, notes = write_agent(fmt.name, rows, described, kept=kept, name=name, slots=slots)
        notes += left_out(rows, described, slots, AGENTS)
        if kept is not None and kept.format == RASA_FILE:
            notes += kept_left_out(kept, RASA_TITLE, slots, Carries(f"{fmt.title}s"))
        return _written(p, payload, notes)
    if suffix == ".json":
        raise ValueError(
            f"Name the agent format of a .json file: {', '.join(export_formats('.json'))}."
        )
    rest = (
        kept
        if kept is None or kept.format != RASA_FILE or suffix not in (".yml", ".yaml")
        else None
    )
    if suffix == "":
        write_intent_folder(rows, p)
        return [
            *device_files(rows),
            *left_out(rows, described, slots, INTENT_FILES),
            *_kept_left_out(rest, slots, INTENT_FILES),
        ]
    carries, writer = _WRITERS.get(suffix, (TABULAR, _csv))
    back = None
    if writer is _rasa and kept is not None and kept.format == RASA_FILE:
        payload, notes = _rasa(rows, described, slots, kept.content)
        try:  # its kept lines carry what the project's do not
            back = parse_rasa_yaml(payload).slots
        except FormatError:
            back = None
    else:
        payload, notes = writer(rows, described, slots)
    notes += left_out(rows, described, slots, carries, back) + _kept_left_out(rest, slots, carries)
    return _written(p, payload, notes)


def _kept_left_out(kept: AgentSource | None, slots: SlotData, carries: Carries) -> list[str]:
    return [] if kept is None else kept_left_out(kept, kept_title(kept.format), slots, carries)


def _written(path: Path, payload: bytes, notes: list[str]) -> list[str]:
    """Write ``payload`` to a temporary name, then rename it to ``path``; returns ``notes``."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(payload)
    tmp.replace(path)
    return notes
