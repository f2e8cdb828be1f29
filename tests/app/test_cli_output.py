"""Issue 64, item 5: what the CLI prints as text carries no control character, whatever the
stream (a terminal, a pipe, a file): each is written as ``\\uXXXX``; data written as CSV stays
exact (:func:`app.cli.common.data_output`). The commands' own tests (``tests/app/test_cli.py``)
check a stored text through ``predict`` in each format."""

from __future__ import annotations

import io
import json

import pytest

from app.cli.common import VisibleText, data_output, visible_output

pytestmark = pytest.mark.fast

HOSTILE = "dana\x1b[2J\rroot\x07 \x9b31m \x7f \u2028 \u202e"


class Stream(io.StringIO):
    def __init__(self, terminal: bool) -> None:
        super().__init__()
        self.terminal = terminal

    def isatty(self) -> bool:
        return self.terminal


@pytest.mark.parametrize("terminal", [False, True], ids=["pipe", "terminal"])
def test_text_output_escapes_control_characters_on_any_stream(terminal):
    raw = Stream(terminal)
    out = VisibleText(raw)
    out.write(HOSTILE + "\n\tnext line\n")
    written = raw.getvalue()
    assert "\\u001b[2J\\u000droot\\u0007" in written
    assert not any(c in written for c in "\x1b\r\x07\x9b\x7f\u2028\u202e")
    assert written.endswith("\n\tnext line\n")  # line feeds and tabs stay


@pytest.mark.parametrize("terminal", [False, True], ids=["pipe", "terminal"])
def test_json_lines_stay_exact_and_csv_is_written_as_it_is(terminal, monkeypatch):
    raw = Stream(terminal)
    monkeypatch.setattr("sys.stdout", raw)
    with visible_output():
        print(json.dumps({"text": HOSTILE}, ensure_ascii=False))
        data_output().write(f'"{HOSTILE}"\r\n')
    line, csv_cell = raw.getvalue().split("\n", 1)
    assert json.loads(line) == {"text": HOSTILE}  # JSON's own escapes: the same text
    assert not any(c in line for c in "\x1b\r\x07\x9b\x7f\u2028\u202e")
    assert csv_cell == f'"{HOSTILE}"\r\n'  # exact, character for character


def test_a_text_without_unprintable_characters_is_written_without_loading_storage():
    """VisibleText escapes only a text Python does not call printable (line feeds and tabs
    aside), so ``--help`` imports no storage: every character it escapes must be one of those."""
    from storage.texts import _CONTROLS

    assert [hex(c) for c in _CONTROLS if chr(c).isprintable()] == []
    out = Stream(terminal=False)
    VisibleText(out).write("plain text…\twith “quotes”\n")
    assert out.getvalue() == "plain text…\twith “quotes”\n"
