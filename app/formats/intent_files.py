"""A folder (or ``.zip``) of ``<intent>.txt`` files: read and write.

``<intent>.txt`` holds one utterance per line (blank lines are ignored) for the train split;
``test/<intent>.txt`` for the test split. Intent names are percent-encoded in file names (``/``
becomes ``%2F``; a Windows device name such as ``CON`` gets its first letter encoded, ``%43ON``:
:mod:`app.formats.file_names`). An utterance in several files of one split is one multi-label row. Rows without
an intent (the ``unlabelled`` split) have no place in the format and are not written. A zip is
checked by :mod:`core.safe_archive` before anything is read from it.

Example:
    >>> files = {k: v.encode() for k, v in dump_intent_files([Row("hi", ("greet",))]).items()}
    >>> files
    {'greet.txt': b'hi\\n'}
    >>> parse_intent_files(files).rows
    [NewUtterance(text='hi', labels=('greet',), split='train', context='')]
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Iterable, Mapping
from pathlib import Path, PurePosixPath
from urllib.parse import quote, unquote

from app.formats.common import (
    MAX_FILE_BYTES,
    FormatError,
    ParsedFile,
    Row,
    check_intent,
    check_text,
    decode,
    finish,
)
from app.formats.csv_quotes import file_lines
from app.formats.file_names import device_note, is_device_name
from core.safe_archive import ArchiveError, read_zip

_SAFE_FILE_CHARS = " -_,()&'+@!=~"


def intent_file_name(intent: str) -> str:
    """The file name of an intent (percent-encoded where a file system would object).

    Example:
        >>> intent_file_name("card/lost"), intent_file_name("con")
        ('card%2Flost.txt', '%63on.txt')
    """
    encoded = quote(intent, safe=_SAFE_FILE_CHARS)
    if encoded.startswith(".") or is_device_name(encoded):
        encoded = f"%{ord(encoded[0]):02X}" + encoded[1:]
    return encoded + ".txt"


def device_files(rows: Iterable[Row]) -> list[str]:
    """The note on intents whose file a Windows device name would have named (see
    :mod:`app.formats.file_names`)."""
    names = sorted({n for row in rows for n in row.labels})
    written = [
        (n, intent_file_name(n))
        for n in names
        if is_device_name(quote(n, safe=_SAFE_FILE_CHARS) + ".txt")
    ]
    return device_note(written, "an import decodes the name back")


def dump_intent_files(rows: Iterable[Row]) -> dict[str, str]:
    """Relative path -> content: ``<intent>.txt`` for train rows, ``<split>/<intent>.txt`` else.

    A multi-label row is written into the file of each of its intents; unlabelled rows are left
    out.
    """
    files: dict[str, list[str]] = {}
    for row in rows:
        if not row.labels:
            continue
        if "\n" in row.text or "\r" in row.text or row.text != row.text.strip():
            raise ValueError(f"{row.text[:40]!r} cannot be one line of a text file.")
        folder = "" if row.split == "train" else f"{row.split}/"
        for name in row.labels:
            files.setdefault(folder + intent_file_name(name), []).append(row.text)
    return {path: "\n".join(texts) + "\n" for path, texts in sorted(files.items())}


def write_intent_folder(rows: Iterable[Row], out: Path) -> list[Path]:
    """Write :func:`dump_intent_files` into the folder ``out`` (created; must hold no .txt)."""
    out = Path(out)
    if out.exists() and any(out.rglob("*.txt")):
        raise FileExistsError(f"{out} already holds .txt files")
    written = []
    for rel, content in dump_intent_files(rows).items():
        path = out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
        written.append(path)
    return written


def write_intent_zip(rows: Iterable[Row]) -> bytes:
    """The same files as :func:`write_intent_folder`, as the bytes of a ``.zip``."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for rel, content in dump_intent_files(rows).items():
            zf.writestr(rel, content.encode("utf-8"))
    return buf.getvalue()


def parse_intent_files(files: Mapping[str, bytes]) -> ParsedFile:
    """Read ``{relative path: bytes}`` of intent text files into rows.

    Hidden files (``.DS_Store``) and ``__MACOSX/`` are ignored; any other file that is not
    ``<intent>.txt`` or ``<split>/<intent>.txt`` is an error.

    Example:
        >>> parse_intent_files({"greet.txt": b"hi\\nhello\\n"}).rows[1]
        NewUtterance(text='hello', labels=('greet',), split='train', context='')
    """
    problems: list[tuple[int, str]] = []
    # (split, text) -> (first line, file, labels)
    merged: dict[tuple[str, str], tuple[int, str, list[str]]] = {}
    order: list[tuple[str, str]] = []
    for rel in sorted(files):
        parts = PurePosixPath(rel).parts
        if any(p.startswith(".") for p in parts) or parts[0] == "__MACOSX":
            continue
        if len(parts) == 1:
            split, fname = "train", parts[0]
        elif len(parts) == 2 and parts[0] in ("train", "test"):
            split, fname = parts[0], parts[1]
        else:
            problems.append((0, f"{rel}: unexpected file (use <intent>.txt or test/<intent>.txt)"))
            continue
        if not fname.endswith(".txt"):
            problems.append((0, f"{rel}: unexpected file (only .txt files hold utterances)"))
            continue
        intent = unquote(fname[: -len(".txt")])
        if (msg := check_intent(intent.strip())) is not None:
            problems.append((0, f"{rel}: {msg}"))
            continue
        try:
            content = decode(files[rel], rel)
        except FormatError as exc:
            problems += [(line, f"{rel}: {msg}") for line, msg in exc.problems] or [
                (0, exc.summary)
            ]
            continue
        seen_here: dict[str, int] = {}
        for n, raw in enumerate(file_lines(content), 1):
            text = raw.strip()
            if not text:
                continue
            if (msg := check_text(text)) is not None:
                problems.append((n, f"{rel}: {msg}"))
                continue
            if text in seen_here:  # the same line twice in one intent's file: once is enough
                continue
            seen_here[text] = n
            key = (split, text)
            if key in merged:  # the same utterance under another intent: multi-label
                merged[key][2].append(intent.strip())
            else:
                merged[key] = (n, rel, [intent.strip()])
                order.append(key)
    found = [
        (merged[key][0], f"{merged[key][1]}: ", Row(key[1], tuple(sorted(merged[key][2])), key[0]))
        for key in order
    ]
    rows = finish(found, problems)
    multi = sum(1 for r in rows if len(r.labels) > 1)
    notes = (
        [f"{multi} utterance(s) appear in several intent files: read as multi-label."]
        if multi
        else []
    )
    return ParsedFile(rows, notes)


def folder_files(path: Path) -> dict[str, bytes]:
    """``{relative path: bytes}`` of every file under a folder.

    Raises:
        FormatError: a symbolic link, or more than 25 MB of files.
    """
    files: dict[str, bytes] = {}
    total = 0
    for p in sorted(Path(path).rglob("*")):
        if p.is_symlink():
            raise FormatError(f"{p.relative_to(path)} is a symbolic link; refusing.")
        if p.is_file():
            total += p.stat().st_size
            if total > MAX_FILE_BYTES:
                raise FormatError("The folder holds more than 25 MB of files.")
            files[p.relative_to(path).as_posix()] = p.read_bytes()
    return files


def read_intent_folder(path: Path) -> ParsedFile:
    """Read a folder of intent ``.txt`` files, or a ``.zip`` of one.

    Raises:
        FormatError: a symbolic link, more than 25 MB of files, a hostile or unreadable zip, or
            any problem :func:`parse_intent_files` finds.
    """
    path = Path(path)
    if path.is_dir():
        return parse_intent_files(folder_files(path))
    return read_intent_zip(path)


def zip_files_of(source: Path | bytes) -> dict[str, bytes]:
    """``{member name: bytes}`` of a zip (a path or its bytes), checked before reading
    (:mod:`core.safe_archive`).

    Raises:
        FormatError: a hostile, oversized or unreadable zip.
    """
    try:
        return read_zip(source, max_bytes=MAX_FILE_BYTES)
    except ArchiveError as exc:
        raise FormatError(str(exc)) from exc


def read_intent_zip(source: Path | bytes) -> ParsedFile:
    """Read a ``.zip`` (a path or its bytes) of intent ``.txt`` files, checked before reading.

    A zip of a single top folder (``intents/greet.txt``) is read as that folder.

    Raises:
        FormatError: a hostile, oversized or unreadable zip, or any problem
            :func:`parse_intent_files` finds.
    """
    return parse_zipped_intent_files(zip_files_of(source))


def parse_zipped_intent_files(files: dict[str, bytes]) -> ParsedFile:
    """:func:`parse_intent_files` for a zip's files: a single top folder is read as the folder."""
    tops = {PurePosixPath(k).parts[0] for k in files if not k.startswith((".", "__MACOSX"))}
    if len(tops) == 1 and not next(iter(tops)).endswith(".txt"):
        top = next(iter(tops))
        if top not in ("train", "test"):
            files = {k[len(top) + 1 :]: v for k, v in files.items() if k.startswith(top + "/")}
    return parse_intent_files(files)
