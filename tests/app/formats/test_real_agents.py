"""Issue 74 item 1: real agents imported and exported again, unedited, through the CLI (a fresh
data directory: real SQLite, the project's slot book and kept agent), come back file for file.

Three had stopped coming back: a Dialogflow CX agent whose entity type is a regexp or a list
(``SshanDSI/DSI-DialogFlow@efa334c``'s ``OrderNumber``, ``xxia2015/CX_Agents@b8a04fe``'s
``bill-state``) gained a second entity type of the same name (``OrderNumber_2``), which CX
refuses on restore; a LUIS app with a list entity of 5,482 airlines
(``vettaioa/FluLoS-Code@e53978f``) was refused; a Rasa file with one text twice in an intent
under different markup (``RasaHQ/rasa-demo@6935627``) lost two lines and gained a ``lookup:``.
Those repositories carry no licence, or the GPL: the inputs here are built with their structure
(``tests/data/agents/``, or generated below), not copied. Microsoft's LUIS samples
(``microsoft/BotBuilder-Samples@55d1f53``, MIT: ``tests/data/agents/LICENSE-BotBuilder-Samples``)
are kept as they are."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pytest

from app.cli import main

AGENTS = Path(__file__).resolve().parents[2] / "data" / "agents"


def files_of(path: Path) -> dict[str, bytes]:
    """A folder's or a zip's files by relative path, or a file's bytes under its name."""
    if path.is_dir():
        return {
            p.relative_to(path).as_posix(): p.read_bytes() for p in path.rglob("*") if p.is_file()
        }
    if path.suffix == ".zip":
        with zipfile.ZipFile(io.BytesIO(path.read_bytes())) as zf:
            return {n: zf.read(n) for n in zf.namelist() if not n.endswith("/")}
    return {"file": path.read_bytes()}


def round_trip(src: Path, out_name: str, tmp: Path, capsys) -> tuple[Path, str, str]:
    """``intent-studio import SRC`` into a new project and ``export -o OUT``: the output and
    what each command said."""
    data = ["--data-dir", str(tmp / "data")]
    assert main([*data, "import", str(src), "--project", "bot"]) == 0, capsys.readouterr()
    imported = capsys.readouterr().out
    out = tmp / out_name
    assert main([*data, "export", "--project", "bot", "-o", str(out)]) == 0, capsys.readouterr()
    return out, imported, capsys.readouterr().out


def assert_same_files(src: Path, out: Path) -> None:
    want, got = files_of(src), files_of(out)
    assert sorted(set(got) - set(want)) == [], "files the export added"
    assert sorted(set(want) - set(got)) == [], "files the export lost"
    assert [n for n in want if want[n] != got[n]] == [], "files the export changed"


def test_a_dialogflow_cx_agent_with_regexp_and_list_entity_types_comes_back_file_for_file(
    tmp_path, capsys
):
    """The structure of DSI-DialogFlow's ``OrderNumber`` (``KIND_REGEXP``, its parts annotated
    as parameter ``ordernumber``) and of the telco agent's ``bill-state`` (``KIND_LIST`` over a
    map type): the export added ``entityTypes/OrderNumber_2/`` and ``entityTypes/bill-state_2/``
    (2 files each), a second entity type of the same display name."""
    src = AGENTS / "cx_entity_kinds"
    out, imported, exported = round_trip(src, "out.zip", tmp_path, capsys)
    assert "Read as Dialogflow CX agent." in imported
    assert "Kept 5 entity annotation(s) with their entity types" in imported
    assert "as Dialogflow CX agent." in exported
    assert_same_files(src, out)


def _luis_app(airlines: int) -> dict[str, object]:
    """A LUIS app with the structure of FluLoS's ``LuisExport_v0.4.json`` (air traffic control:
    machine-learned entities with children labelled inside their parents, regex and prebuilt
    features, closed lists) and a list entity of ``airlines`` values (5,482 there)."""
    lists = {
        "ListAirlines": [
            {"canonicalForm": f"airline {i:05d}", "list": []} for i in range(airlines)
        ],
        "ListFlightLevelInstructions": [
            {"canonicalForm": "climb", "list": []},
            {"canonicalForm": "descend", "list": ["descent"]},
        ],
    }
    call_sign = {"entity": "MLCallSign", "startPos": 0, "endPos": 13}
    children = [
        {"entity": "Airline", "startPos": 0, "endPos": 9, "children": []},
        {"entity": "FlightNr", "startPos": 11, "endPos": 13, "children": []},
    ]
    return {
        "luis_schema_version": "7.0.0",
        "intents": [
            {
                "name": "FlightLevel",
                "features": [{"modelName": "MLFlightLevel", "isRequired": False}],
            },
            {"name": "None", "features": []},
        ],
        "entities": [
            {
                "name": "MLCallSign",
                "children": [
                    {
                        "name": "Airline",
                        "children": [],
                        "features": [{"modelName": "ListAirlines", "isRequired": False}],
                    },
                    {"name": "FlightNr", "children": [], "features": []},
                ],
                "roles": [],
                "features": [],
            },
            {
                "name": "MLFlightLevel",
                "children": [
                    {
                        "name": "Level",
                        "children": [],
                        "features": [{"modelName": "RegexFlightLevel", "isRequired": False}],
                    }
                ],
                "roles": [],
                "features": [],
            },
        ],
        "hierarchicals": [],
        "composites": [],
        "closedLists": [
            {"name": name, "subLists": subs, "roles": []} for name, subs in lists.items()
        ],
        "prebuiltEntities": [{"name": "geographyV2", "roles": []}],
        "utterances": [
            {
                "text": "airline 00087 descend now level 300",
                "intent": "FlightLevel",
                "entities": [
                    {**call_sign, "children": children},
                    {
                        "entity": "MLFlightLevel",
                        "startPos": 14,
                        "endPos": 34,
                        "children": [
                            {"entity": "Level", "startPos": 32, "endPos": 34, "children": []}
                        ],
                    },
                ],
            },
            {"text": "airline 00517 climb to level 320", "intent": "FlightLevel", "entities": []},
            {"text": "good morning", "intent": "None", "entities": []},
        ],
        "versionId": "0.4_v3",
        "name": "FluLoS-like",
        "desc": "added alphanumeric flight numbers",
        "culture": "en-us",
        "tokenizerVersion": "1.0.0",
        "patternAnyEntities": [],
        "regex_entities": [
            {"name": "RegexFlightLevel", "regexPattern": "(flight )?level (\\d+)", "roles": []}
        ],
        "phraselists": [],
        "regex_features": [],
        "patterns": [],
        "settings": [{"name": "NormalizePunctuation", "value": "false"}],
    }


def test_a_luis_app_with_a_list_entity_of_5482_values_comes_back_byte_for_byte(tmp_path, capsys):
    """FluLoS's app was refused on import: "Slot 'ListAirlines' has 5482 values; the limit is
    5000." A list entity of that size is ordinary in LUIS (which takes 20,000 items a list)."""
    src = tmp_path / "LuisExport_v0.4.json"
    src.write_text(json.dumps(_luis_app(5482), indent=2), encoding="utf-8")
    out, imported, exported = round_trip(src, "out.json", tmp_path, capsys)
    assert "Read as LUIS app." in imported
    # its children labels (Airline inside MLCallSign) stay with the app: said, not modelled
    assert "Kept 3 nested entity label(s) (a machine-learned entity's children)" in imported
    assert "as LUIS app." in exported and "Left out" not in exported
    assert out.read_bytes() == src.read_bytes()


def test_a_list_past_the_largest_a_platform_takes_is_refused_with_what_to_do(tmp_path, capsys):
    src = tmp_path / "big.json"
    src.write_text(json.dumps(_luis_app(20_001)), encoding="utf-8")
    data = ["--data-dir", str(tmp_path / "data")]
    assert main([*data, "import", str(src), "--project", "bot"]) != 0
    said = capsys.readouterr()
    assert "Traceback" not in said.err
    assert (
        "Slot 'ListAirlines' has 20,001 values; the limit is 20,000 (the largest list entity "
        "LUIS takes): split its values between two slots, or leave out those no utterance "
        "names, and import again." in said.err + said.out
    )
    assert main([*data, "projects"]) == 0
    assert "bot" not in capsys.readouterr().out  # nothing imported


@pytest.mark.parametrize("name", ["luis_FlightBooking.json", "luis_HomeAutomation.json"])
def test_microsofts_luis_samples_come_back_byte_for_byte_and_say_nothing_was_left_out(
    name, tmp_path, capsys
):
    """Exported back unedited, they were the same bytes but said "Left out 10 (12) entity
    value(s) and synonym(s)": the synonyms of their closed lists ('paris', 'cdg' of 'Paris'),
    which the app's closed lists still hold, were counted as left out."""
    src = AGENTS / name
    out, imported, exported = round_trip(src, "out.json", tmp_path, capsys)
    assert "Read as LUIS app." in imported
    assert "Left out" not in exported, exported
    assert out.read_bytes() == src.read_bytes()


def test_a_rasa_file_with_one_text_twice_under_different_markup_comes_back_byte_for_byte(
    tmp_path, capsys
):
    """rasa-demo's ``nlu.yml`` has "I'm a [bot developer](job_function)" and "I'm a bot
    [developer](job_function)" in one intent, and "i'm a [developer](job_function)" beside
    "i'm a developer": the project keeps one markup per text, and the export dropped the lines
    of the other (2 lines) and added a ``lookup:`` for the value only they wrote. A lookup
    entry written as markup (``[quattro stagioni](pizza)``) came back as a second ``lookup:``
    table of 1 entry. The import says which markup the project keeps; the export, which writes
    both back, said "Left out 1 template(s)" (the other markup's)."""
    src = AGENTS / "rasa_markup_twice.yml"
    out, imported, exported = round_trip(src, "out.yml", tmp_path, capsys)
    assert out.read_bytes() == src.read_bytes()
    assert "Left out" not in exported  # it said the template of the other markup was
    assert (
        "2 text(s) are written twice under different entity markup: the project keeps the first "
        'annotated one\'s (the Rasa file keeps both): "I\'m a bot developer", "i\'m a developer".'
        in imported
    )
