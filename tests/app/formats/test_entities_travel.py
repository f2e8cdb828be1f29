"""Issue 66 item 1: a project's entity annotations (a Rasa bot's ``[Berlin](city)``) were all
dropped by a Dialogflow ES/CX, LUIS, CLU or Watson export ("platform agents have no place for
them"), though each has one: annotated training-phrase parts (Dialogflow), labelled entity spans
(LUIS, CLU), contextual mentions (Watson). They travel now, with their entity types declared as
each platform needs them (a Dialogflow intent's parameters and entity types, LUIS's
machine-learned entities, CLU's and Watson's entities), the slot book's values and synonyms
where the platform holds them, and an import reads them back; what a platform cannot hold is
named, item by item, in the export's notes."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest

from app.formats import read_any, write_any
from app.formats.agents import agent_format
from tests.app.formats.agents import unzipped

pytestmark = pytest.mark.fast

FIXTURE = Path(__file__).resolve().parents[2] / "data" / "rasa_bank_nlu.yml"
# what each platform holds of an annotation: its role (a parameter or a LUIS role), and an
# entity type's values and synonyms
ROLES = {"dialogflow-es", "dialogflow-cx", "dialogflow-cx-json", "luis"}
VALUES = {"dialogflow-es", "dialogflow-cx", "dialogflow-cx-json", "clu", "watson"}
FORMATS = ["dialogflow-es", "dialogflow-cx", "dialogflow-cx-json", "luis", "clu", "watson"]


def _spans(entities: dict, role: bool = True) -> set[tuple]:
    return {
        (text, e["start"], e["end"], e["entity"], e.get("role") if role else None)
        for text, found in entities.items()
        for e in found
    }


def _export(fmt: str):
    """The Rasa bot exported as a platform agent (as the app exports a project), and read back."""
    parsed = read_any(FIXTURE)
    intents = {n: parsed.descriptions.get(n, "") for r in parsed.rows for n in r.labels}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"bank.{agent_format(fmt).container}"
        notes = write_any(parsed.rows, path, intents, parsed.slots, format=fmt, name="bank")
        payload = path.read_bytes()
    return parsed, payload, notes, read_any(payload, suffix=path.suffix)


@pytest.mark.parametrize("fmt", FORMATS)
def test_entity_annotations_travel_to_every_platform_and_back(fmt):
    parsed, _, notes, back = _export(fmt)
    source = _spans(parsed.slots.entities, role=fmt in ROLES)
    assert len(source) == 9
    assert _spans(back.slots.entities, role=fmt in ROLES) == source  # 9 of 9
    assert any("Kept 9 entity annotation(s) with their entity types" in n for n in back.notes)
    if fmt not in ROLES:  # the role is named, item by item
        (said,) = [n for n in notes if "role(s) of entity annotations" in n]
        assert "'payee' (PERSON)" in said
    if fmt in VALUES:  # an entity type's values and synonyms
        assert back.slots.synonyms == parsed.slots.synonyms
        assert set(back.slots.book["vendor_name"]) == {"Target", "Starbucks", "Costco"}
    else:
        (said,) = [n for n in notes if "entity value(s) and synonym(s)" in n]
        assert "vendor_name: 'Costco'" in said and "account_type: 'card'" in said


def test_a_dialogflow_es_agent_declares_what_its_annotated_parts_name():
    _, payload, _, _ = _export("dialogflow-es")
    files = unzipped(payload)
    said = json.loads(files["intents/transfer_money_usersays_en.json"])
    parts = said[0]["data"]
    assert parts[1] == {"text": "John", "alias": "payee", "meta": "@PERSON", "userDefined": True}
    intent = json.loads(files["intents/transfer_money.json"])
    (params,) = [r["parameters"] for r in intent["responses"]]
    assert {(p["name"], p["dataType"], p["value"]) for p in params} == {
        ("payee", "@PERSON", "$payee"),
        ("PERSON", "@PERSON", "$PERSON"),
    }
    entries = json.loads(files["entities/account_type_entries_en.json"])
    assert {"value": "credit", "synonyms": ["credit", "credit card", "card"]} in entries
    assert json.loads(files["entities/account_type.json"])["name"] == "account_type"


def test_dialogflow_cx_luis_clu_and_watson_declare_their_entities():
    files = unzipped(_export("dialogflow-cx")[1])
    intent = json.loads(files["intents/transfer_money/transfer_money.json"])
    assert {"id": "payee", "entityType": "@PERSON"} in intent["parameters"]
    assert "entityTypes/vendor_name/entities/en.json" in files
    luis = json.loads(_export("luis")[1])
    declared = {e["name"]: e["roles"] for e in luis["entities"]}
    assert declared["PERSON"] == ["payee"] and "vendor_name" in declared
    labelled = {e["entity"] for u in luis["utterances"] for e in u["entities"]}
    assert labelled <= set(declared)
    clu = json.loads(_export("clu")[1])["assets"]
    categories = {e["category"]: e for e in clu["entities"]}
    assert {s["listKey"] for s in categories["vendor_name"]["list"]["sublists"]} == {
        "Target", "Starbucks", "Costco"
    }  # fmt: skip
    watson = json.loads(_export("watson")[1])
    credit = next(e for e in watson["entities"] if e["entity"] == "account_type")
    assert {"type": "synonyms", "value": "credit", "synonyms": ["credit card", "card"]} in credit[
        "values"
    ]


def test_offsets_count_utf16_where_the_platform_does():
    """LUIS, CLU and Watson count an emoji as two units, as their services do."""
    from app.formats import Row
    from core.slots import EntitySpan, SlotData

    text = "😀 send 5 to Ana"
    slots = SlotData({"PERSON": ["Ana"]}, entities={text: [EntitySpan(12, 15, "PERSON").to_dict()]})
    for fmt in ("luis", "clu", "watson"):
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "a.json"
            write_any([Row(text, ("pay",))], path, {"pay": ""}, slots, format=fmt)
            payload = path.read_bytes()
        raw = payload.decode()
        assert ('"startPos": 13' in raw) or ('"offset": 13' in raw) or ("13,\n" in raw), fmt
        back = read_any(payload, suffix=".json")
        assert back.slots.entities[text][0]["start"] == 12, fmt
