"""File and folder names an export writes that every system can extract: Windows refuses a name
whose part before the first dot is a device name (``CON``, ``PRN``, ``AUX``, ``NUL``, ``COM0``-
``COM9``, ``LPT0``-``LPT9``, their superscript forms, ``CONIN$``, ``CONOUT$``; in any case, spaces
after it too), so an intent called ``con`` or ``aux.help`` cannot be a file called so.

Such a name gets a ``_`` after the device word (``CON_``, ``aux_.help``) in an agent's zip
(Dialogflow ES and CX, Lex V2), where the file name is not the intent's name (an import reads the
name inside the file), and its first letter percent-encoded (``%43ON.txt``) in intent ``.txt``
files, whose names are percent-encoded already (an import decodes it back to ``CON``). The
export's notes say which intents were written so (:func:`device_note`).

A download's name has an ASCII stand-in too, for the clients that read only the ``filename``
of ``Content-Disposition`` (curl ``-OJ``, Python's ``email`` package): :func:`ascii_name`
transliterates the name (``Проект`` is ``Proekt``, ``订披萨`` is ``DingPiSa``) and falls back
on ``project-<id>`` when nothing readable is left.

Example:
    >>> is_device_name("nul"), is_device_name("Aux.help"), is_device_name("console")
    (True, True, False)
    >>> device_safe("CON"), device_safe("aux.help"), device_safe("greet")
    ('CON_', 'aux_.help', 'greet')
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

from anyascii import anyascii

_DIGITS = [*"0123456789", "\u00b9", "\u00b2", "\u00b3"]
WINDOWS_DEVICES = frozenset(
    {"CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$"}
    | {f"{port}{d}" for port in ("COM", "LPT") for d in _DIGITS}
)
SHOW = 8
_UNSAFE_FILE = re.compile(r'[\\/:*?"<>|\x00-\x1f]')  # what no file system takes in a name
# What an ASCII download name keeps (the rest becomes "_"), and a name's suffixes (".slots.yml").
_NOT_PLAIN = re.compile(r"[^A-Za-z0-9._\-()+,;=@ ]+")
_SUFFIX = re.compile(r"(.*?)((?:\.[A-Za-z0-9]{1,8})*)", re.DOTALL)
# How an import of an agent finds an intent whose file or folder is not named as it is.
NAME_INSIDE = "an import reads the intent's name inside its file"


def _device_part(name: str) -> str:
    return name.split(".", 1)[0].rstrip(" ")


def is_device_name(name: str) -> bool:
    """Whether Windows takes a file or folder called ``name`` for a device."""
    return _device_part(name).upper() in WINDOWS_DEVICES


def device_safe(name: str) -> str:
    """``name``, or (a device name) with ``_`` after its device word."""
    if not is_device_name(name):
        return name
    word = _device_part(name)
    return word + "_" + name[len(word) :]


def device_note(written: Sequence[tuple[str, str]], how: str) -> list[str]:
    """The note on intents whose file or folder is not named as they are: ``(intent, name
    written)`` pairs; ``how`` says how an import finds the intent's name again."""
    if not written:
        return []
    shown = ", ".join(f"{a!r} as {b!r}" for a, b in written[:SHOW])
    more = f" and {len(written) - SHOW} more" if len(written) > SHOW else ""
    return [
        f"{len(written)} intent(s) are Windows device names, which Windows cannot extract as file "
        f"or folder names: written {shown}{more} ({how})."
    ]


def ascii_name(filename: str, stand_in: str = "project") -> str:
    """An ASCII file name for clients that read only ``filename=``: the name transliterated
    (accents dropped, other scripts written in Latin letters: ``anyascii``), characters a file
    name should not hold ``_``, and ``stand_in`` (``project-<id>`` where the caller knows the
    project) for a stem with no letter or digit left.

    Example:
        >>> ascii_name("Café menu.csv"), ascii_name("Проект.slots.yml"), ascii_name('a"b.zip')
        ('Cafe menu.csv', 'Proekt.slots.yml', 'a_b.zip')
        >>> ascii_name("订披萨.zip"), ascii_name("مشروع.json"), ascii_name("⁂.csv", "project-7")
        ('DingPiSa.zip', 'mshrw.json', 'project-7.csv')
    """
    stem, suffix = _SUFFIX.fullmatch(filename).groups()  # type: ignore[union-attr]
    plain = "".join(
        c if c.isascii() else anyascii(c).strip("'`")  # Arabic's ayn and hamza: ` and '
        for c in unicodedata.normalize("NFC", stem)
    )
    plain = _NOT_PLAIN.sub("_", plain).strip(" ._")
    if not any(c.isalnum() for c in plain):
        plain = stand_in
    return plain + suffix


def safe_file_name(name: str, taken: set[str], devices: list[tuple[str, str]] | None = None) -> str:
    """A file or folder name for a new intent: characters no file system takes become ``_``, a
    Windows device name gets a ``_`` (:mod:`app.formats.file_names`; the pair is added to
    ``devices``)."""
    base = _UNSAFE_FILE.sub("_", name).strip(" .") or "intent"
    if is_device_name(base):
        base = device_safe(base)
        if devices is not None:
            devices.append((name, base))
    out, n = base, 2
    while out.casefold() in taken:
        out, n = f"{base}_{n}", n + 1
    taken.add(out.casefold())
    return out
