"""Issue 66 item 2: a Lex bot's slot references (``{CardType}``) survived Lex to Lex, but came back
from CSV or Rasa as plain text (Lex cannot build an utterance naming a slot its intent lacks, and
the slot was gone), and slot definitions did not travel at all. A reference is now an annotated
span (its entity the slot's type, its role the slot's name): CSV and JSONL carry it in their
``entities`` column, Rasa as markup, Dialogflow as a parameter, CLU as an entity, and a Lex
export gives each intent the slots its utterances name, with the custom slot types' values and
synonyms from the slot book (a slot book file carries them beside a CSV file)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from app.formats import AgentSource, dump_slot_book, read_any, write_any
from app.formats.agents import agent_format, write_agent
from core.slots import SlotData
from tests.app.formats.agents import unzipped, zipped

pytestmark = pytest.mark.fast

AT = "Bank/BotLocales/en_US/"
SLOT_REFERENCE = re.compile(r"\{([0-9A-Za-z][0-9A-Za-z_-]*)\}")  # a Lex slot reference
SAMPLES = {
    "OrderCard": [
        "I want a {CardType}",
        "send me a new {CardType} please",
        "order a {CardType} for {Person}",
        "can I get a {CardType} by {Date}",
    ],
    "PayBill": [
        "pay {Amount} to {Person}",
        "transfer {Amount} on {Date}",
        "send {Amount}",
        "pay my bill",
    ],
}
SLOTS = {  # slot -> its type
    "OrderCard": {"CardType": "CardTypes", "Person": "AMAZON.FirstName", "Date": "AMAZON.Date"},
    "PayBill": {"Amount": "AMAZON.Number", "Person": "AMAZON.FirstName", "Date": "AMAZON.Date"},
}
REFERENCES = sum(len(SLOT_REFERENCE.findall(t)) for texts in SAMPLES.values() for t in texts)


def lex_bot() -> bytes:
    """A Lex V2 bot in the shape of Lex's documented export: two intents with slots, a custom
    slot type with synonyms, built-in types."""
    files: dict = {
        "manifest.json": {"metadata": {"schemaVersion": "1", "fileFormat": "LexJson"}},
        "Bank/Bot.json": {"name": "Bank", "version": "DRAFT"},
        AT + "BotLocale.json": {"name": "English (US)", "identifier": "en_US"},
        AT + "SlotTypes/CardTypes/SlotType.json": {
            "name": "CardTypes",
            "slotTypeValues": [
                {"sampleValue": {"value": "credit card"}, "synonyms": [{"value": "credit"}]},
                {"sampleValue": {"value": "debit card"}, "synonyms": None},
            ],
            "valueSelectionSetting": {"resolutionStrategy": "TopResolution"},
        },
    }
    for intent, samples in SAMPLES.items():
        files[AT + f"Intents/{intent}/Intent.json"] = {
            "name": intent,
            "sampleUtterances": [{"utterance": s} for s in samples],
            "slotPriorities": [
                {"priority": i + 1, "slotName": slot} for i, slot in enumerate(SLOTS[intent])
            ],
        }
        for slot, kind in SLOTS[intent].items():
            files[AT + f"Intents/{intent}/Slots/{slot}/Slot.json"] = {
                "name": slot,
                "slotTypeName": kind,
                "valueElicitationSetting": {"slotConstraint": "Optional"},
            }
    return zipped(files)


def lex_state(payload: bytes) -> tuple[int, dict, dict]:
    """What a Lex export holds: slot references in its utterances, each intent's slots and
    their types, the custom slot types' values."""
    files = unzipped(payload)
    references, slots, types = 0, {}, {}
    for path, data in files.items():
        if path.endswith("/Intent.json") and "Fallback" not in path:
            doc = json.loads(data)
            references += sum(
                len(SLOT_REFERENCE.findall(s["utterance"])) for s in doc["sampleUtterances"] or []
            )
            slots[doc["name"]] = {}
        elif path.endswith("/SlotType.json"):
            doc = json.loads(data)
            types[doc["name"]] = {
                v["sampleValue"]["value"]: [w["value"] for w in v.get("synonyms") or []]
                for v in doc["slotTypeValues"]
            }
    for path, data in files.items():
        if path.endswith("/Slot.json"):
            intent = path.split("/Intents/")[1].split("/")[0]
            doc = json.loads(data)
            slots.setdefault(intent, {})[doc["name"]] = doc["slotTypeName"]
    return references, slots, types


def _into_lex(parsed, slots: SlotData | None = None, tmp: Path | None = None) -> tuple[bytes, list]:
    out = (tmp or Path("/tmp")) / "bot.zip"
    notes = write_any(
        parsed.rows,
        out,
        {n: "" for r in parsed.rows for n in r.labels},
        slots or parsed.slots,
        format="lex-v2",
        name="Bank",
    )
    return out.read_bytes(), notes


def test_a_lex_bot_reads_its_slot_references_and_types():
    parsed = read_any(lex_bot(), suffix=".zip")
    assert REFERENCES == 11
    spans = [e for found in parsed.slots.entities.values() for e in found]
    assert len(spans) == 11
    assert {
        "start": 9,
        "end": 19,
        "entity": "CardTypes",
        "role": "CardType",
    } in parsed.slots.entities["I want a {CardType}"]
    assert parsed.slots.book["CardTypes"] == ["credit card", "debit card"]
    assert parsed.slots.synonyms["CardTypes"] == {"credit card": ["credit"]}


@pytest.mark.parametrize("suffix", [".csv", ".jsonl", ".yml"])
def test_slot_references_and_types_come_back_to_lex_through_a_file(tmp_path, suffix):
    parsed = read_any(lex_bot(), suffix=".zip")
    path = tmp_path / f"bank{suffix}"
    write_any(parsed.rows, path, {}, parsed.slots)
    back = read_any(path)
    book = tmp_path / "bank.slots.yml"  # the slot book file beside it, as the app exports it
    book.write_text(dump_slot_book(parsed.slots))
    values = read_any(book).slots
    slots = SlotData(
        {**values.book, **back.slots.book},
        back.slots.templates,
        back.slots.entities,
        values.synonyms or back.slots.synonyms,
    )
    payload, notes = _into_lex(back, slots, tmp_path)
    references, intents, types = lex_state(payload)
    assert references == 11  # 11 of 11 (was 0 of 11: written as plain text)
    assert intents == SLOTS
    assert types == {"CardTypes": {"credit card": ["credit"], "debit card": []}}
    assert not any("name a slot their intent lacks" in n for n in notes)


@pytest.mark.parametrize("fmt", ["dialogflow-es", "dialogflow-cx", "clu"])
def test_slot_references_come_back_to_lex_through_another_platform(tmp_path, fmt):
    parsed = read_any(lex_bot(), suffix=".zip")
    intents = {n: "" for r in parsed.rows for n in r.labels}
    path = tmp_path / f"agent.{agent_format(fmt).container}"
    write_any(parsed.rows, path, intents, parsed.slots, format=fmt)
    back = read_any(path)
    lex, _ = _into_lex(back, tmp=tmp_path)
    references, slots, types = lex_state(lex)
    assert references == 11 and slots == SLOTS
    assert types["CardTypes"]["credit card"] == ["credit"]


def test_a_slot_type_without_values_is_typed_alphanumeric_and_said(tmp_path):
    parsed = read_any(lex_bot(), suffix=".zip")
    csv = tmp_path / "bank.csv"
    write_any(parsed.rows, csv, {}, parsed.slots)
    payload, notes = _into_lex(read_any(csv), tmp=tmp_path)  # no slot book beside it
    references, slots, _ = lex_state(payload)
    assert references == 11 and slots["OrderCard"]["CardType"] == "AMAZON.AlphaNumeric"
    assert any("typed AMAZON.AlphaNumeric: CardType (CardTypes)" in n for n in notes)


def test_the_bot_round_trips_unchanged():
    data = lex_bot()
    parsed = read_any(data, suffix=".zip")
    intents = {n: "" for r in parsed.rows for n in r.labels}
    kept = AgentSource("lex-v2", data)
    out, _ = write_agent("lex-v2", parsed.rows, intents, kept=kept)
    assert unzipped(out) == unzipped(data)
