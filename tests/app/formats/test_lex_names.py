"""Issue 66 item 4: Lex refuses names outside ASCII letters, digits, ``_`` and ``-``, so an
export wrote ``订披萨`` as ``intent_2``, and an import of that export brought back an intent
called ``intent_2``. The export now keeps the names Lex refused in ``intent-studio-names.json``
beside its ``manifest.json``, and an import reads each intent back under its own name; the
names stay stable through later exports of the same bot."""

from __future__ import annotations

import json

import pytest

from app.formats import AgentSource, Row, read_any
from app.formats.agents import write_agent
from tests.app.formats.agents import lex_v2, unzipped
from tests.app.formats.rows import key

pytestmark = pytest.mark.fast

NAMES_FILE = "intent-studio-names.json"  # app.formats.agents.lex.NAMES_FILE

ROWS = [
    Row("我想订一个披萨", ("订披萨",)),
    Row("хочу заказать пиццу", ("заказать пиццу",)),
    Row("اريد بيتزا", ("طلب بيتزا",)),
    Row("a table for two", ("book table",)),
    Row("hello", ("greet",)),
]


def _intents(rows: list[Row]) -> dict[str, str]:
    return {n: "" for r in rows for n in r.labels}


def test_names_lex_refuses_come_back_under_their_own_name():
    payload, notes = write_agent("lex-v2", ROWS, _intents(ROWS), name="shop")
    files = unzipped(payload)
    written = sorted(json.loads(files[p])["name"] for p in files if p.endswith("/Intent.json"))
    assert written == ["FallbackIntent", "book_table", "greet", "intent", "intent_2", "intent_3"]
    names = json.loads(files[NAMES_FILE])["intents"]["en_US"]
    assert sorted(names.values()) == sorted(["订披萨", "заказать пиццу", "طلب بيتزا", "book table"])
    assert any(NAMES_FILE in n for n in notes)
    back = read_any(payload, suffix=".zip")
    assert key(back.rows) == key(ROWS)  # every intent under its own name
    assert any("have the names they had in Intent Studio" in n for n in back.notes)
    # an export into the bot imported back: the same bot, byte for byte
    kept = AgentSource("lex-v2", payload)
    again, _ = write_agent("lex-v2", back.rows, _intents(back.rows), kept=kept)
    assert unzipped(again) == files
    # a phrase added: the same Lex names, the map unchanged
    more = [*back.rows, Row("one more pizza please", ("订披萨",))]
    third, _ = write_agent("lex-v2", more, _intents(more), kept=kept)
    assert unzipped(third)[NAMES_FILE] == files[NAMES_FILE]
    assert key(read_any(third, suffix=".zip").rows) == key(more)


def test_a_deleted_intent_leaves_the_map_and_a_bot_without_one_reads_as_before():
    payload, _ = write_agent("lex-v2", ROWS, _intents(ROWS), name="shop")
    rest = [r for r in ROWS if r.labels != ("订披萨",)]
    out, _ = write_agent("lex-v2", rest, _intents(rest), kept=AgentSource("lex-v2", payload))
    names = json.loads(unzipped(out)[NAMES_FILE])["intents"]["en_US"]
    assert "订披萨" not in names.values() and len(names) == 3
    _, plain = lex_v2()  # a bot as Lex exports it: no map
    assert NAMES_FILE not in unzipped(plain)
    assert read_any(plain, suffix=".zip").rows  # reads as it always did
