"""How a REST route hands over a file whatever the names in it: HTTP headers are Latin-1 on the
wire (Starlette encodes them so, and refuses anything else), while project and intent names are
any Unicode text.

- The file name goes into ``Content-Disposition`` as RFC 6266 says: ``filename*=UTF-8''…``
  (RFC 5987 percent-encoded UTF-8: the exact name, for every current browser and client) after
  ``filename="…"``, an ASCII stand-in for clients that know only that one: the name
  transliterated, or ``project-<id>`` where nothing readable is left
  (:func:`app.formats.file_names.ascii_name`).
- A note (``X-Export-Note``: what an export left out or renamed) is percent-encoded UTF-8, ASCII
  whatever it holds: printable ASCII stays as it is (a ``%`` becomes ``%25``), anything else
  (letters of other scripts, line breaks) becomes ``%XX`` bytes. A client reads it back with
  ``urllib.parse.unquote`` (``decodeURIComponent`` in a browser).

Example:
    >>> content_disposition("Проект.csv")
    'attachment; filename="Proekt.csv"; filename*=UTF-8\\'\\'%D0%9F%D1%80%D0%BE%D0%B5%D0%BA%D1%82.csv'
    >>> ascii_note("Renamed 'привет' -> 'intent'. 100% done")
    "Renamed '%D0%BF%D1%80%D0%B8%D0%B2%D0%B5%D1%82' -> 'intent'. 100%25 done"
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

from fastapi.responses import FileResponse

from app.formats.file_names import ascii_name

NOTE_HEADER = "X-Export-Note"
MAX_NOTE_CHARS = 500  # of the note before it is encoded (at most 9 bytes a character after)
# Printable ASCII but "%", which starts an escape: kept as it is in a note.
_NOTE_SAFE = "".join(chr(c) for c in range(0x20, 0x7F) if chr(c) != "%")


def content_disposition(filename: str, stand_in: str = "project") -> str:
    """``Content-Disposition`` of a download called ``filename`` (RFC 6266 with RFC 5987's
    ``filename*``; see the module docstring); ``stand_in``: the ASCII name's stem where the
    name has nothing readable in ASCII."""
    plain = ascii_name(filename, stand_in)
    return f"attachment; filename=\"{plain}\"; filename*=UTF-8''{quote(filename)}"


def ascii_note(note: str, limit: int = MAX_NOTE_CHARS) -> str:
    """A note as an ASCII header value: at most ``limit`` characters of it (``…`` where it was
    cut), percent-encoded as the module docstring says."""
    if len(note) > limit:
        note = note[: limit - 1] + "…"
    return quote(note, safe=_NOTE_SAFE)


def file_download(
    path: Path,
    filename: str,
    *,
    note: str | None = None,
    media_type: str | None = None,
    project_id: int | None = None,
) -> FileResponse:
    """The file at ``path`` as a download called ``filename``, with ``note`` in
    :data:`NOTE_HEADER` (``project_id``: its ASCII name is ``project-<id>`` where the name has
    nothing readable in ASCII)."""
    stand_in = "project" if project_id is None else f"project-{int(project_id)}"
    headers = {"Content-Disposition": content_disposition(filename, stand_in)}
    if note is not None:
        headers[NOTE_HEADER] = ascii_note(note)
    return FileResponse(path, headers=headers, media_type=media_type)
