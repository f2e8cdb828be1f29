"""The texts a bundle's ``predict.py`` is asked about, read and checked before the bundle loads
(issue 74 item 4): what it cannot classify is an :class:`InputProblem`, said in one line on
stderr with exit status 2 (:func:`core.bundle.standalone.main`), never a traceback and never an
exit 0 that says nothing.

The texts are the command line's arguments, else stdin's lines (blank ones skipped), read as
bytes: a line must be UTF-8 (a UTF-8 byte order mark at the start is dropped; UTF-16 is named as
such), hold no NUL byte (a binary file), and be at most :data:`MAX_TEXT_CHARS` characters, the
app's limit on an utterance (``storage.texts.MAX_TEXT_CHARS``; a line is never read past it).

Example:
    >>> import io
    >>> texts_of([], io.BytesIO(b"\\xef\\xbb\\xbfI lost my card\\r\\n\\nhi\\n"))
    ['I lost my card', 'hi']
    >>> texts_of([], io.BytesIO(b"caf\\xe9\\n"))
    Traceback (most recent call last):
    ...
    core.bundle.inputs.InputProblem: line 1 of the input is not UTF-8 text (byte 0xe9 at column 4): save it as UTF-8.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import BinaryIO

# The app's limit on an utterance (storage.texts.MAX_TEXT_CHARS: a test holds them equal).
MAX_TEXT_CHARS = 2000
_LINE_BYTES = 4 * MAX_TEXT_CHARS + 2  # UTF-8 takes at most 4 bytes a character, then CR LF
_BOM = b"\xef\xbb\xbf"
_UTF16 = (b"\xff\xfe", b"\xfe\xff")


class InputProblem(ValueError):
    """Input ``predict.py`` cannot classify; its message is one line for the person running it."""


def texts_of(arguments: Sequence[str], stdin: BinaryIO) -> list[str]:
    """The texts to classify: ``arguments``, else each non-blank line of ``stdin``.

    Raises:
        InputProblem: an empty argument or no text at all, a text over :data:`MAX_TEXT_CHARS`,
            or a line that is not UTF-8 text (see the module docstring).
    """
    if arguments:
        return [_argument(text, n) for n, text in enumerate(arguments, 1)]
    texts = []
    n = 0
    while raw := stdin.readline(_LINE_BYTES + 1):
        n += 1
        if n == 1 and raw.startswith(_UTF16):
            raise InputProblem("the input is UTF-16 text: save it as UTF-8 and run again.")
        text = _line(raw.removeprefix(_BOM) if n == 1 else raw, n)
        if text.strip():
            texts.append(text)
    if not texts:
        raise InputProblem(
            "no text to classify: give the texts as arguments, or one a line on stdin."
        )
    return texts


def _too_long(where: str) -> InputProblem:
    return InputProblem(
        f"{where} is longer than {MAX_TEXT_CHARS:,} characters, the app's limit on an "
        "utterance: shorten it."
    )


def _argument(text: str, n: int) -> str:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # bytes the locale could not decode, kept as surrogates
        raise InputProblem(f"argument {n} is not UTF-8 text: give it in UTF-8.") from None
    if not text.strip():
        raise InputProblem(f"argument {n} is empty: give a text to classify.")
    if len(text) > MAX_TEXT_CHARS:
        raise _too_long(f"argument {n}")
    return text


def _line(raw: bytes, n: int) -> str:
    """One line of stdin as text, without its line end."""
    where = f"line {n} of the input"
    if len(raw) > _LINE_BYTES and not raw.endswith(b"\n"):
        raise _too_long(where)
    if b"\x00" in raw:
        raise InputProblem(
            f"{where} holds a NUL byte: predict.py reads text, one utterance a line, not a "
            "binary file."
        )
    try:
        text = raw.decode("utf-8").removesuffix("\n").removesuffix("\r")
    except UnicodeDecodeError as exc:
        raise InputProblem(
            f"{where} is not UTF-8 text (byte 0x{raw[exc.start]:02x} at column "
            f"{len(raw[: exc.start].decode('utf-8')) + 1}): save it as UTF-8."
        ) from None
    if len(text) > MAX_TEXT_CHARS:
        raise _too_long(where)
    return text
