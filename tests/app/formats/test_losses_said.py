"""Issue 74 item 2: what a format cannot carry between platforms is carried some other way or named
in the export's notes with its count, never dropped without a word: Rasa's inline values
(``[NYC]{"entity": "city", "value": "New York"}``) and entity groups on every platform, a role
given two entity types in one intent (``RasaHQ/carbon-bot``'s ``from``: a ``city`` and an
``iata``; 36 of its 749 spans came back from Dialogflow CX as the other type), the synonyms of
slot values in CSV and JSONL, a Rasa file's ``regex:`` items and lone ``synonym:`` maps, and the
rest of a kept agent in another format."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest

from app.formats import AgentSource, read_any, write_any
from app.formats.agents import agent_format

pytestmark = pytest.mark.fast

BOT = b"""version: "3.1"
nlu:
- intent: book_flight
  examples: |
    - fly from [Berlin]{"entity": "city", "role": "from"} to [Paris]{"entity": "city", "role": "to"}
    - fly from [TXL]{"entity": "iata", "role": "from"} to [Paris]{"entity": "city", "role": "to"}
    - from [London]{"entity": "city", "role": "from"} to [NYC]{"entity": "city", "role": "to", "value": "New York"}
    - a [window]{"entity": "seat", "group": "1"} seat for [Ana]{"entity": "name", "group": "1"}
- intent: greet
  examples: |
    - hello
- synonym: New York
  examples: |
    - NYC
    - the big apple
- synonym: USA
  examples: |
    - the States
- regex: zipcode
  examples: |
    - [0-9]{5}
"""
AGENTS = ["dialogflow-es", "dialogflow-cx", "dialogflow-cx-json", "luis", "clu", "watson"]


def export(fmt: str, *, kept: bool = False):
    """The bot exported to ``fmt`` (an agent format, or a suffix) as the app exports a project
    (``kept``: with the Rasa file kept, as an imported project has it), its notes, and the file
    read back."""
    parsed = read_any(BOT, suffix=".yml")
    intents = {n: "" for r in parsed.rows for n in r.labels}
    source = AgentSource("rasa", BOT) if kept else None
    agent = fmt in AGENTS or fmt == "lex-v2"
    suffix = f".{agent_format(fmt).container}" if agent else fmt
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"bot{suffix}"
        options = {"format": fmt} if agent else {}
        notes = write_any(parsed.rows, path, intents, parsed.slots, kept=source, **options)
        back = read_any(path.read_bytes(), suffix=suffix)
    return parsed, notes, back


def spans(parsed, *keys: str) -> set[tuple]:
    return {
        (text, e["start"], e["end"], *(e.get(k) for k in keys))
        for text, found in parsed.slots.entities.items()
        for e in found
    }


@pytest.mark.parametrize("fmt", ["dialogflow-cx", "dialogflow-cx-json"])
def test_a_role_given_two_entity_types_keeps_each_type_through_dialogflow_cx_and_is_said(fmt):
    """A CX parameter has one entity type: ``TXL`` (iata, role ``from``) was written under the
    intent's parameter ``from`` (@city) and came back as a city, unsaid. It gets a parameter of
    its own now, ``from_iata``, and comes back an iata under that role; the notes say so."""
    parsed, notes, back = export(fmt)
    assert spans(back, "entity") == spans(parsed, "entity")  # every span keeps its entity type
    (said,) = [n for n in notes if "come back under another role" in n]
    assert said.startswith("1 annotation(s) come back under another role")
    assert "'TXL' (iata: from → from_iata)" in said
    (txl,) = [e for e in back.slots.entities["fly from TXL to Paris"] if e["entity"] == "iata"]
    assert txl["role"] == "from_iata"


@pytest.mark.parametrize("fmt", AGENTS)
def test_inline_values_and_entity_groups_are_named_with_their_count_on_every_platform(fmt):
    _, notes, back = export(fmt)
    assert not [e for found in back.slots.entities.values() for e in found if "group" in e]
    (values,) = [n for n in notes if n.startswith("Left out the value of")]
    assert values.startswith("Left out the value of 1 annotation(s) (what a synonym stands for)")
    assert values.endswith(": 'NYC' → 'New York' (city).")
    (groups,) = [n for n in notes if n.startswith("Left out the group of")]
    assert groups.startswith("Left out the group of 2 annotation(s)")
    assert "'window' (group 1 in 'a window seat for Ana')" in groups


@pytest.mark.parametrize("suffix", [".csv", ".jsonl", ".yml"])
def test_csv_jsonl_and_rasa_carry_values_groups_and_roles(suffix):
    parsed, notes, back = export(suffix)
    keys = ("entity", "role", "value", "group")
    assert spans(back, *keys) == spans(parsed, *keys)
    assert not [n for n in notes if "annotation" in n]


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_the_synonyms_of_slot_values_are_named_by_csv_and_jsonl(suffix):
    """CSV and JSONL carry annotations, not an entity type's synonyms: they were left out
    without a word (the slot book file, slots.yml, carries them)."""
    parsed, notes, back = export(suffix)
    assert parsed.slots.synonyms == {"city": {"New York": ["NYC", "the big apple"]}}
    assert back.slots.synonyms == {}
    assert (
        "Left out 2 synonym(s) of 1 slot value(s) (the other ways a value is written): CSV and "
        "JSONL files have no place for them; export the slot book (slots.yml) to keep them."
    ) in notes


@pytest.mark.parametrize("fmt", [".csv", "dialogflow-es", "luis"])
def test_a_rasa_files_regexes_and_lone_synonym_maps_are_named_by_other_formats(fmt):
    _, notes, _ = export(fmt, kept=True)
    said = [n for n in notes if "of the Rasa file the project came from" in n]
    assert [n.split(":")[0] for n in said] == [
        "Left out 1 regex item(s) of the Rasa file the project came from ('zipcode')",
        "Left out 1 synonym map(s) of the Rasa file the project came from that name no "
        "annotated value ('USA')",
    ]
    _, notes, _ = export(".yml", kept=True)  # the Rasa file itself writes them back
    assert not [n for n in notes if "of the Rasa file" in n]


def test_the_rest_of_a_kept_agent_is_named_by_an_export_to_another_kind_of_file(tmp_path):
    from tests.app.formats.agents import dialogflow_cx

    _, data = dialogflow_cx()
    parsed = read_any(data, suffix=".zip")
    intents = {n: "" for r in parsed.rows for n in r.labels}
    out = tmp_path / "bot.csv"
    notes = write_any(parsed.rows, out, intents, parsed.slots, kept=parsed.agent)
    assert (
        "Left out the rest of the Dialogflow CX agent the project keeps (what the app does not "
        "model: flows, responses, entity types and the like): CSV and JSONL files have no place "
        "for it; an export to a Dialogflow CX agent writes it back."
    ) in notes


def test_an_agents_values_no_slot_value_can_be_are_named_on_import():
    """A value with a brace or a line break, or over 200 characters, is no slot value here: it
    (and its synonyms) was left out of the slot book without a word (the agent keeps it, every
    other format lost it)."""
    skill = {
        "intents": [{"intent": "order", "examples": [{"text": "order a pizza"}]}],
        "entities": [
            {
                "entity": "code",
                "values": [
                    {"type": "synonyms", "value": "A{1}", "synonyms": ["ok"]},
                    {"type": "synonyms", "value": "B2", "synonyms": ["x" * 201]},
                ],
            }
        ],
        "counterexamples": [],
    }
    parsed = read_any(json.dumps(skill).encode(), suffix=".json")
    assert parsed.slots.book == {"code": ["B2"]}
    assert (
        "Left out of the slot book 3 entity value(s) and synonym(s) no slot value can be, or "
        "whose value cannot (empty, a brace or a line break, over 200 characters): code: 'A{1}', "
        "code: 'ok', code: 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx' (the agent keeps them; "
        "other formats leave them out)."
    ) in parsed.notes
