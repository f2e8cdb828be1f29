"""Utterance files in the formats designers already use, and the one place that picks the format.

:func:`read_any` and :func:`write_any` dispatch on the file suffix (a folder is a folder of intent
``.txt`` files): ``.csv`` (also ``.tsv``, ``.txt`` and no suffix), ``.jsonl``/``.ndjson``, Rasa
``.yml``/``.yaml``, a ``.zip`` of intent files. Pure functions over plain rows
(:class:`storage.utterances.NewUtterance`, aliased :data:`Row`): nothing here touches a database.
A file is validated completely first; any problem raises :class:`FormatError` and no row is
returned.

Example:
    >>> read_any(b"text,label\\nhi,greet\\n", suffix=".csv").rows
    [NewUtterance(text='hi', labels=('greet',), split='train', context='')]
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from app.formats.common import (
    MAX_FILE_BYTES,
    FormatError,
    ParsedFile,
    Row,
    check_size,
    decode,
    merge_repeats,
)
from app.formats.intent_files import (
    dump_intent_files,
    parse_intent_files,
    read_intent_folder,
    read_intent_zip,
    write_intent_folder,
    write_intent_zip,
)
from app.formats.rasa import dump_rasa_yaml, parse_rasa_yaml
from app.formats.slot_book import dump_slot_book, is_slot_book, parse_slot_book
from app.formats.tabular import (
    from_spreadsheet_safe,
    parse_csv,
    parse_jsonl,
    read_csv,
    read_jsonl,
    spreadsheet_safe,
    write_csv,
    write_jsonl,
)
from core.slots import SlotData

__all__ = [
    "MAX_FILE_BYTES",
    "FormatError",
    "ParsedFile",
    "Row",
    "dump_intent_files",
    "dump_rasa_yaml",
    "dump_slot_book",
    "from_spreadsheet_safe",
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


def _read_yaml(data: bytes) -> ParsedFile:
    """Rasa NLU YAML, or a slot book file (``slot_book:`` / ``templates:``, no ``nlu:``)."""
    return parse_slot_book(data) if is_slot_book(decode(data)) else parse_rasa_yaml(data)


_READERS: dict[str, Callable[[bytes], ParsedFile]] = {
    ".csv": read_csv,
    ".tsv": read_csv,
    ".txt": read_csv,
    "": read_csv,
    ".jsonl": read_jsonl,
    ".ndjson": read_jsonl,
    ".yml": _read_yaml,
    ".yaml": _read_yaml,
    ".zip": read_intent_zip,
}


def read_any(source: str | Path | bytes, *, suffix: str | None = None) -> ParsedFile:
    """Read and validate a file of utterances, picking the format by its suffix.

    Args:
        source: a file or folder path, or a file's bytes.
        suffix: the format of bytes (``".csv"``); for a path, overrides the path's suffix.

    Raises:
        FormatError: an unsupported suffix, a file over 25 MB (refused before reading), or any
            problem in the file. Nothing is returned then.
    """
    path = None if isinstance(source, bytes) else Path(source)
    if path is not None and path.is_dir():
        return read_intent_folder(path)  # one row per text already (same text = multi-label)
    own_suffix = "" if path is None else path.suffix
    kind = (suffix if suffix is not None else own_suffix).lower()
    reader = _READERS.get(kind)
    if reader is None:
        raise FormatError(
            f"Unsupported file type {kind!r}: use .csv, .jsonl, Rasa .yml, "
            "or a folder / .zip of intent_name.txt files."
        )
    if path is None:
        assert isinstance(source, bytes)
        parsed = reader(source)
    else:
        check_size(path.stat().st_size)
        parsed = reader(path.read_bytes())
    if not parsed.rows:  # a slot book file: no utterances
        return parsed
    rows, notes = merge_repeats(parsed.rows)
    return ParsedFile(
        rows, [*parsed.notes, *notes], parsed.flattened_entities, parsed.descriptions, parsed.slots
    )


Descriptions = dict[str, str] | None
_WRITERS: dict[str, Callable[[Iterable[Row], Descriptions, SlotData | None], bytes]] = {
    ".zip": lambda rows, _, __: write_intent_zip(rows),
    ".yml": lambda rows, d, slots: dump_rasa_yaml(rows, d, slots=slots).encode("utf-8"),
    ".yaml": lambda rows, d, slots: dump_rasa_yaml(rows, d, slots=slots).encode("utf-8"),
    ".jsonl": lambda rows, d, _: write_jsonl(rows, d).encode("utf-8"),
    ".ndjson": lambda rows, d, _: write_jsonl(rows, d).encode("utf-8"),
}


def write_any(
    rows: Iterable[Row],
    path: str | Path,
    descriptions: Descriptions = None,
    slots: SlotData | None = None,
) -> None:
    """Write rows in the format the path's suffix names: ``.jsonl``, Rasa ``.yml``/``.yaml``, a
    ``.zip`` of intent files, no suffix for a folder of them, CSV for anything else.

    A file is written to a temporary name and renamed, so a failed write leaves no half file.
    Rasa and intent files leave unlabelled rows out. Intent ``descriptions`` go in a
    ``description`` column (CSV, JSONL) or the intent item's ``metadata`` (Rasa); intent files
    have no place for them. Rasa files carry ``slots`` (entity markup and ``lookup:`` tables);
    the other formats have no place for them.
    """
    p = Path(path)
    suffix = p.suffix.lower()
    if suffix == "":
        write_intent_folder(rows, p)
        return
    writer = _WRITERS.get(suffix, lambda rows, d, _: write_csv(rows, d).encode("utf-8"))
    payload = writer(rows, descriptions, slots)
    tmp = p.with_name(p.name + ".tmp")
    tmp.write_bytes(payload)
    tmp.replace(p)
