"""Agent files get the checks every import gets: the format is found by content, problems name
their file and place, names that are not valid here are mapped and said, look-alike names and
hostile archives are refused, and nothing is returned from a refused file."""

from __future__ import annotations

import io
import json
import zipfile

import pytest

from app.formats import FormatError, Row, read_any, write_any
from app.formats.agents import write_agent
from tests.app.formats.agents import cx_files, dialogflow_es, dumps, es_files, watson, zipped


def _watson(*names: str, examples: list | None = None) -> bytes:
    intents = [
        {"intent": n, "examples": examples or [{"text": f"hi {i}"}]} for i, n in enumerate(names)
    ]
    return dumps({"intents": intents, "counterexamples": []})


@pytest.mark.parametrize("suffix", ["", ".txt", ".json"])
def test_a_json_agent_is_recognised_by_its_content(suffix):
    _, data = watson()
    assert read_any(data, suffix=suffix).format == "Watson Assistant skill"


@pytest.mark.parametrize("suffix", [".zip", "", ".txt", ".json"])
def test_an_agent_zip_is_recognised_by_its_content(suffix):
    _, data = dialogflow_es()
    assert read_any(data, suffix=suffix).format == "Dialogflow ES agent"


def test_an_agent_folder_is_read_as_the_agent(tmp_path):
    for rel, value in es_files().items():
        path = tmp_path / "agent" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(dumps(value))
    parsed = read_any(tmp_path / "agent")
    assert parsed.format == "Dialogflow ES agent" and len(parsed.rows) == 4


def test_other_files_keep_their_formats_and_say_which(tmp_path):
    write_any([Row("hi", ("greet",))], tmp_path / "a.zip")
    assert read_any(tmp_path / "a.zip").format == "zip of intent files"
    assert read_any(b"text,label\nhi,greet\n", suffix=".csv").format == "CSV"
    assert read_any(b"text,label\n{hi},greet\n", suffix=".txt").format == "CSV"


def test_json_of_another_shape_is_refused_naming_the_formats_read():
    with pytest.raises(FormatError, match=r"not an agent export this app reads.*LUIS app"):
        read_any(b'{"rows": []}', suffix=".json")


def test_json_that_does_not_parse_names_its_line():
    with pytest.raises(FormatError) as err:
        read_any(b'{\n  "intents": [\n}\n', suffix=".json")
    assert err.value.problems[0][0] == 3


def test_nesting_past_the_limit_is_refused_before_parsing():
    data = b'{"intents": ' + b"[" * 5000 + b"]" * 5000 + b"}"
    with pytest.raises(FormatError, match="deeper than 64 levels"):
        read_any(data, suffix=".json")


def test_each_problem_names_its_path_and_nothing_is_read():
    examples = [{"text": "fine"}, {"txt": "typo"}, {"text": "   "}]
    with pytest.raises(FormatError) as err:
        read_any(_watson("greet", examples=examples), suffix=".json")
    assert err.value.problems == [
        (0, "intents[0].examples[1]: an example needs a 'text' string"),
        (0, "intents[0].examples[2].text: empty text"),
    ]


def test_a_problem_in_a_zipped_agent_names_its_file():
    files = es_files()
    files["intents/balance_usersays_en.json"] = [{"data": [{"text": "x" * 2001}]}]
    with pytest.raises(FormatError) as err:
        read_any(zipped(files), suffix=".zip")
    assert err.value.problems == [
        (0, "intents/balance_usersays_en.json[0]: text is 2001 characters (limit 2000)")
    ]


def test_bad_json_in_a_zipped_agent_names_its_file_and_line():
    files = es_files()
    files["intents/balance.json"] = b'{\n  "name": "balance",\n  oops\n}'
    with pytest.raises(FormatError) as err:
        read_any(zipped(files), suffix=".zip")
    ((line, msg),) = err.value.problems
    assert line == 3 and msg.startswith("intents/balance.json: Expecting property name")


def test_a_name_not_valid_here_is_mapped_said_and_written_back():
    data = _watson("pay|bill", "hidden\u200bname")
    parsed = read_any(data, suffix=".json")
    assert {r.labels[0] for r in parsed.rows} == {"pay/bill", "hiddenname"}
    (note,) = [n for n in parsed.notes if "mapped" in n]
    assert "'pay|bill' -> 'pay/bill'" in note
    assert "'hidden\\u200bname' -> 'hiddenname'" in note  # the invisible character shown


def test_the_platform_names_come_back_on_export(tmp_path):
    data = _watson("pay|bill")
    parsed = read_any(data, suffix=".json")
    write_any(
        parsed.rows, tmp_path / "w.json", {"pay/bill": ""}, format="watson", kept=parsed.agent
    )
    assert (tmp_path / "w.json").read_bytes() == data


@pytest.mark.parametrize(
    "names",
    [
        ("greet", "gr\u0435et"),  # Cyrillic e
        ("caf\u00e9", "cafe\u0301"),  # NFC and NFD
        ("Greet", "greet"),  # case (issue 43, hole 4: two intents before)
        ("greet", "\uff47\uff52\uff45\uff45\uff54"),  # full width
        ("greet", "greet\ufe00"),  # a variation selector
    ],
)
def test_intent_names_that_are_one_name_here_are_read_as_the_first_and_said(names, tmp_path):
    """Refused before (look-alikes) or read as two intents (case, width); one name here is one
    intent, the first one's, and the export writes the phrases back into that platform intent."""
    parsed = read_any(_watson(*names), suffix=".json")
    first = names[0]
    assert [r.labels for r in parsed.rows] == [(first,), (first,)]
    (note,) = [n for n in parsed.notes if "written another way" in n]
    assert f"{names[1]!r} (intents[1]) → {first!r}" in note
    notes = write_any(
        parsed.rows, tmp_path / "w.json", {first: ""}, format="watson", kept=parsed.agent
    )
    (intent,) = json.loads((tmp_path / "w.json").read_bytes())["intents"]
    assert intent["intent"] == first and len(intent["examples"]) == 2
    assert any(f"{names[1]!r} (into {first!r})" in n for n in notes), notes


def test_an_intent_defined_twice_is_refused():
    with pytest.raises(FormatError, match="intent 'greet' is defined twice"):
        read_any(_watson("greet", "greet"), suffix=".json")


def test_a_hostile_agent_zip_is_refused_before_reading():
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("agent.json", json.dumps({"language": "en"}))
        zf.writestr("../intents/evil.json", "{}")
    with pytest.raises(FormatError, match="unsafe path"):
        read_any(buf.getvalue(), suffix=".zip")


def test_a_luis_utterance_of_an_undeclared_intent_is_a_problem():
    app = {
        "luis_schema_version": "7.0.0",
        "intents": [{"name": "None"}],
        "utterances": [{"text": "hello", "intent": "Greet", "entities": []}],
    }
    with pytest.raises(FormatError) as err:
        read_any(dumps(app), suffix=".json")
    assert err.value.problems == [(0, "utterances[0]: intent 'Greet' is not in intents")]


def test_a_text_under_two_intents_is_one_multi_label_row():
    app = {
        "luis_schema_version": "7.0.0",
        "intents": [{"name": "A"}, {"name": "B"}],
        "utterances": [{"text": "both", "intent": "A"}, {"text": "both", "intent": "B"}],
    }
    parsed = read_any(dumps(app), suffix=".json")
    assert parsed.rows == [Row("both", ("A", "B"))]
    assert "1 phrase(s) are under several intents: read as multi-label." in parsed.notes


def test_an_actions_skill_reads_and_writes_its_workspace():
    _, data = watson()
    skill = {"name": "Demo", "type": "action", "workspace": json.loads(data), "status": "Available"}
    raw = dumps(skill)
    parsed = read_any(raw, suffix=".json")
    assert parsed.format == "Watson Assistant skill" and len(parsed.rows) == 4
    rows = [*parsed.rows, Row("block it now", ("card_lost",))]
    intents = {"card_lost": "The customer lost a card or had it stolen", "balance": ""}
    out = json.loads(write_agent("watson", rows, intents, kept=parsed.agent)[0])
    assert out["status"] == "Available" and out["type"] == "action"
    assert out["workspace"]["intents"][0]["examples"][-1] == {"text": "block it now"}


def test_a_dialogflow_cx_folder_is_read_as_the_agent(tmp_path):
    for rel, value in cx_files().items():
        path = tmp_path / "cx" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(dumps(value))
    parsed = read_any(tmp_path / "cx")
    assert parsed.format == "Dialogflow CX agent" and len(parsed.rows) == 4


def test_an_agent_is_written_only_to_a_file_of_its_kind(tmp_path):
    rows = [Row("hi", ("greet",))]
    with pytest.raises(ValueError, match=r"A LUIS app is written as a \.json file, not 'x\.zip'"):
        write_any(rows, tmp_path / "x.zip", {"greet": ""}, format="luis")
    with pytest.raises(ValueError, match="Unknown agent format 'rasa'"):
        write_any(rows, tmp_path / "x.json", {"greet": ""}, format="rasa")
    assert not list(tmp_path.iterdir())
