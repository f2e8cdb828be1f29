"""Issue 45, row 14: platform round trips lost data. A phrase twice in one intent came back once
(a Dialogflow ES copy with an ``@sys.location`` annotation was the one dropped; a CX copy with
``repeatCount: 3`` too), with no message; a relabelled phrase lost its entity labels and id (in
LUIS and CLU too, where they do not depend on the intent); CX descriptions lost their trailing
spaces. An export of an unedited import is now identical; a relabelled phrase keeps what does not
depend on its intent, and what cannot be kept is listed in the export's notes."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from app.formats import Row, read_any
from app.formats.agents import write_agent
from tests.app.formats.agents import (
    BUILDERS,
    cx_files,
    dumps,
    es_files,
    lex_files,
    unzipped,
    zipped,
)

LOCATED = [{"text": "I am in "}, {"text": "Paris", "alias": "location", "meta": "@sys.location"}]


def _es(files: dict[str, Any]) -> None:
    said = files["intents/card.lost_usersays_en.json"]
    said.append({"id": "p4", "data": [{"text": "I am in Paris"}], "count": 0, "lang": "en"})
    parts = [{**p, "userDefined": "alias" in p} for p in LOCATED]
    said.append({"id": "p5", "data": parts, "count": 0, "lang": "en"})


def _cx(files: dict[str, Any]) -> None:
    said = files["intents/card.lost/trainingPhrases/en.json"]["trainingPhrases"]
    said.append({"id": "a3", "parts": [{"text": "my card was stolen"}], "repeatCount": 3})
    files["intents/card.lost/card.lost.json"]["description"] += "  "  # trailing spaces


def _cx_json(doc: dict[str, Any]) -> None:
    lost = doc["intents"][1]
    lost["trainingPhrases"].append(
        {"parts": [{"text": "my card was stolen"}], "repeatCount": 3, "languageCode": "en"}
    )
    lost["description"] += " "


def _watson(doc: dict[str, Any]) -> None:
    doc["intents"][0]["examples"].append({"text": "my card was stolen"})
    doc["intents"][0]["description"] += " "


def _luis(doc: dict[str, Any]) -> None:
    doc["utterances"].append({"text": "my card was stolen", "intent": "CardLost", "entities": []})


def _clu(doc: dict[str, Any]) -> None:
    doc["assets"]["utterances"].append(
        {"text": "my card was stolen", "language": "en-us", "intent": "CardLost", "entities": []}
    )


EDIT: dict[str, Callable[[Any], None]] = {
    "dialogflow-es": _es,
    "dialogflow-cx": _cx,
    "dialogflow-cx-json": _cx_json,
    "watson": _watson,
    "luis": _luis,
    "clu": _clu,
}


def agent(fmt: str, edit: Callable[[Any], None] | None = None) -> tuple[str, bytes]:
    """The test agent of ``fmt`` (tests/app/formats/agents.py), changed by ``edit``."""
    if fmt == "dialogflow-es":
        files = es_files()
    elif fmt == "dialogflow-cx":
        files = cx_files()
    else:
        doc = json.loads(BUILDERS[fmt]()[1])
        if edit is not None:
            edit(doc)
        return ".json", dumps(doc)
    if edit is not None:
        edit(files)
    return ".zip", zipped(files)


def intents_of(parsed) -> dict[str, str]:
    names = {n for r in parsed.rows for n in r.labels} | set(parsed.descriptions)
    return {n: parsed.descriptions.get(n, "") for n in sorted(names)}


def same(suffix: str, a: bytes, b: bytes) -> bool:
    return unzipped(a) == unzipped(b) if suffix == ".zip" else a == b


@pytest.mark.parametrize("fmt", list(EDIT))
def test_an_unedited_import_is_exported_identical_repeats_and_spaces_included(fmt):
    suffix, data = agent(fmt, EDIT[fmt])
    parsed = read_any(data, suffix=suffix)
    payload, notes = write_agent(fmt, parsed.rows, intents_of(parsed), kept=parsed.agent)
    assert same(suffix, payload, data), notes


def _balance(fmt: str) -> str:
    return "Balance" if fmt in ("luis", "clu") else "balance"


def relabelled(fmt: str, target: str, edit: Callable[[Any], None] | None = None):
    """The test agent, and its export after "I lost my credit card" (the phrase with an entity
    part) was relabelled from the lost-card intent to ``target``."""
    suffix, data = agent(fmt, edit)
    parsed = read_any(data, suffix=suffix)
    moved = "I lost my credit card"
    rows = [Row(r.text, (target,), r.split) if r.text == moved else r for r in parsed.rows]
    payload, notes = write_agent(fmt, rows, {**intents_of(parsed), target: ""}, kept=parsed.agent)
    back = read_any(payload, suffix=suffix)
    assert [r.labels for r in back.rows if r.text == moved] == [(target,)]
    return data, payload, notes


def _with_card_type(files: dict[str, Any]) -> None:
    """Dialogflow: the balance intent has the card-type parameter too."""
    if "intents/balance.json" in files:
        files["intents/balance.json"]["responses"] = [
            {"parameters": [{"name": "card-type", "dataType": "@card-type"}]}
        ]
    else:
        files["intents/balance/balance.json"]["parameters"] = [
            {"id": "card-type", "entityType": "@card-type"}
        ]


def test_a_relabelled_dialogflow_es_phrase_keeps_its_id_and_parts():
    data, payload, notes = relabelled("dialogflow-es", "balance", _with_card_type)
    before, after = unzipped(data), unzipped(payload)
    original = json.loads(before["intents/card.lost_usersays_en.json"])[0]
    assert json.loads(after["intents/balance_usersays_en.json"]) == [
        json.loads(before["intents/balance_usersays_en.json"])[0],
        original,  # id p1, the annotated part: balance has the card-type parameter
    ]
    assert [p["id"] for p in json.loads(after["intents/card.lost_usersays_en.json"])] == ["p2"]
    assert not [n for n in notes if "annotation" in n]


def test_a_relabelled_dialogflow_cx_phrase_keeps_its_id_parts_and_repeat_count():
    data, payload, notes = relabelled("dialogflow-cx", "balance", _with_card_type)
    before, after = unzipped(data), unzipped(payload)
    was = json.loads(before["intents/card.lost/trainingPhrases/en.json"])["trainingPhrases"][0]
    now = json.loads(after["intents/balance/trainingPhrases/en.json"])["trainingPhrases"]
    assert now[-1] == was
    assert not [n for n in notes if "annotation" in n]


@pytest.mark.parametrize("fmt", ["dialogflow-es", "dialogflow-cx", "dialogflow-cx-json"])
def test_an_entity_part_the_new_intent_has_no_parameter_for_is_dropped_and_said(fmt):
    """A Dialogflow entity part names a parameter of its intent: into an intent without it, the
    phrase keeps its id and text, the part becomes plain text, and the notes say so."""
    _data, payload, notes = relabelled(fmt, "card_found")
    assert (
        "1 relabelled phrase(s) lost an entity part whose parameter their new intent lacks: "
        "'I lost my credit card' (card-type in 'card_found')." in notes
    )
    if fmt == "dialogflow-cx-json":
        found = next(i for i in json.loads(payload)["intents"] if i["displayName"] == "card_found")
        phrase = found["trainingPhrases"][0]
    else:
        files = unzipped(payload)
        path = next(
            p for p in files if "card_found" in p and ("usersays" in p or "trainingPhrases" in p)
        )
        phrase = json.loads(files[path])
        phrase = phrase["trainingPhrases"][0] if isinstance(phrase, dict) else phrase[0]
    parts = phrase.get("data") or phrase["parts"]
    assert "".join(p["text"] for p in parts) == "I lost my credit card"
    assert not [p for p in parts if "alias" in p or "parameterId" in p]
    if fmt != "dialogflow-cx-json":  # the JSON file's phrases have no ids
        assert phrase["id"] in ("p1", "a1")


@pytest.mark.parametrize("fmt", ["luis", "clu", "watson"])
def test_a_relabelled_utterance_keeps_its_entity_labels(fmt):
    """LUIS and CLU entity labels and Watson mentions name entities of the whole app, not of the
    intent: a relabelled utterance keeps them, and only its intent changes."""
    data, payload, _ = relabelled(fmt, _balance(fmt))
    before, after = json.loads(data), json.loads(payload)
    if fmt == "watson":
        was = before["intents"][0]["examples"][0]
        balance = next(i for i in after["intents"] if i["intent"] == "balance")
        assert was in balance["examples"] and "mentions" in was
        return
    utterances = (after.get("assets") or after)["utterances"]
    was = (before.get("assets") or before)["utterances"][0]
    now = [u for u in utterances if u["text"] == "I lost my credit card"]
    assert now == [{**was, "intent": "Balance"}]
    assert now[0]["entities"]
    assert utterances.index(now[0]) == 0  # where it was


LEX_AT = "DemoBank/BotLocales/en_US/Intents/"


@pytest.mark.parametrize("target", ["Balance", "card_found"])  # a kept intent, a new one
def test_a_lex_utterance_naming_a_slot_its_new_intent_lacks_is_written_plain_and_said(target):
    """Issue 56 row 16: relabelling ``I lost my {CardType}`` into an intent without a
    ``CardType`` slot wrote a bot Lex cannot build, without the note Dialogflow gives."""
    parsed = read_any(zipped(lex_files()), suffix=".zip")
    moved = "I lost my {CardType}"
    rows = [Row(r.text, (target,), r.split) if r.text == moved else r for r in parsed.rows]
    payload, notes = write_agent(
        "lex-v2", rows, {**intents_of(parsed), target: ""}, kept=parsed.agent
    )
    files = unzipped(payload)
    intent = json.loads(files[f"{LEX_AT}{target}/Intent.json"])
    assert {"utterance": "I lost my CardType"} in intent["sampleUtterances"]
    assert not any("{" in u["utterance"] for u in intent["sampleUtterances"])
    assert (
        "1 phrase(s) name a slot their intent lacks (Lex cannot build such a bot): written with "
        f"the slot's name as plain text: 'I lost my {{CardType}}' (CardType in {target!r})."
        in notes
    )


def test_a_lex_utterance_keeps_its_slot_reference_in_an_intent_that_has_the_slot():
    files = lex_files()
    files[f"{LEX_AT}Balance/Intent.json"]["slotPriorities"] = [
        {"priority": 1, "slotName": "CardType"}
    ]
    parsed = read_any(zipped(files), suffix=".zip")
    moved = "I lost my {CardType}"
    rows = [Row(r.text, ("Balance",), r.split) if r.text == moved else r for r in parsed.rows]
    payload, notes = write_agent("lex-v2", rows, intents_of(parsed), kept=parsed.agent)
    balance = json.loads(unzipped(payload)[f"{LEX_AT}Balance/Intent.json"])
    assert {"utterance": moved} in balance["sampleUtterances"]
    assert not [n for n in notes if "slot" in n]
