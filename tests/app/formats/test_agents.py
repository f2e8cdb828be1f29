"""Platform agents both ways: each hand-built agent (tests/app/formats/agents.py) reads as its rows,
writes back byte for byte when nothing changed, keeps what the app does not model when the
project changed, and a BANKING77 slice exported to each format reads back the same."""

from __future__ import annotations

import json

import pytest

from app.formats import AgentSource, FormatError, Row, read_any, write_any
from app.formats.agents import agent_format, write_agent
from tests.app.formats.agents import (
    BUILDERS,
    DESCRIBED,
    EXPECTED,
    cx_files,
    dumps,
    es_files,
    lex_files,
    unzipped,
)
from tests.app.formats.rows import key

FORMATS = list(BUILDERS)


def _read(fmt: str):
    suffix, data = BUILDERS[fmt]()
    return suffix, data, read_any(data, suffix=suffix)


def _intents(parsed) -> dict[str, str]:
    """Every intent of a project imported from ``parsed`` -> its description."""
    names = {n for r in parsed.rows for n in r.labels} | set(parsed.descriptions)
    return {n: parsed.descriptions.get(n, "") for n in sorted(names)}


@pytest.mark.parametrize("fmt", FORMATS)
def test_each_agent_reads_as_its_rows_and_names_its_format(fmt):
    _, _, parsed = _read(fmt)
    assert key(parsed.rows) == key(EXPECTED[fmt])
    assert parsed.agent is not None and parsed.agent.format == fmt
    assert parsed.format == agent_format(fmt).title
    assert parsed.notes[0].startswith(f"The {parsed.format} has ")
    lost = EXPECTED[fmt][1].labels[0]
    if fmt in DESCRIBED:
        assert parsed.descriptions == {lost: "The customer lost a card or had it stolen"}
    else:
        assert parsed.descriptions == {}


@pytest.mark.parametrize("fmt", FORMATS)
def test_an_unchanged_project_is_written_back_byte_for_byte(tmp_path, fmt):
    suffix, data, parsed = _read(fmt)
    out = tmp_path / f"agent{suffix}"
    notes = write_any(parsed.rows, out, _intents(parsed), format=fmt, kept=parsed.agent)
    if suffix == ".zip":
        assert unzipped(out.read_bytes()) == unzipped(data)
    else:
        assert out.read_bytes() == data
    assert not [n for n in notes if "Left out" in n and "phrase" in n]


def _edited(fmt: str, parsed) -> tuple[list[Row], dict[str, str]]:
    """The project after some work: a phrase added and one removed, a new described intent, a new
    out-of-scope example; the balance intent has lost its only phrase."""
    lost = EXPECTED[fmt][1].labels[0]
    rows = [r for r in parsed.rows if r.text != "how much money do I have"]
    rows += [
        Row("someone took my wallet", (lost,)),
        Row("activate my new card", ("card_activate",)),
        Row("tell me a joke", ("out_of_scope",)),
    ]
    intents = _intents(parsed) | {"card_activate": "The customer wants to start using a card"}
    return rows, intents


@pytest.mark.parametrize("fmt", FORMATS)
def test_edits_are_written_and_read_back(fmt):
    suffix, _, parsed = _read(fmt)
    rows, intents = _edited(fmt, parsed)
    payload, notes = write_agent(fmt, rows, intents, kept=parsed.agent)
    back = read_any(payload, suffix=suffix)
    expected = rows
    if fmt == "lex-v2":  # Lex's fallback takes no utterances
        expected = [r for r in rows if r.labels != ("out_of_scope",)]
        assert "Left out 1 'out_of_scope' phrase(s): the agent's fallback takes none." in notes
    assert key(back.rows) == key(expected)
    if fmt in DESCRIBED:
        assert back.descriptions["card_activate"] == "The customer wants to start using a card"
    if fmt == "dialogflow-es":
        assert "Left out 1 intent description(s): Dialogflow ES has no place for them." in notes


@pytest.mark.parametrize("fmt", ["dialogflow-es", "dialogflow-cx", "lex-v2"])
def test_files_the_app_does_not_model_come_back_unchanged(fmt):
    _suffix, data, parsed = _read(fmt)
    rows, intents = _edited(fmt, parsed)
    before = unzipped(data)
    after = unzipped(write_agent(fmt, rows, intents, kept=parsed.agent)[0])
    untouched = {
        "dialogflow-es": [
            "agent.json",
            "package.json",
            "entities/card-type.json",
            "entities/card-type_entries_en.json",
            "intents/Default Welcome Intent.json",
            "intents/card.lost.json",
            "intents/card.lost_usersays_de.json",
            "intents/balance.json",
            "intents/Default Fallback Intent.json",
        ],
        "dialogflow-cx": [
            "agent.json",
            "flows/Default Start Flow/Default Start Flow.json",
            "flows/Default Start Flow/pages/Block card.json",
            "entityTypes/card-type/card-type.json",
            "intents/card.lost/card.lost.json",
            "intents/card.lost/trainingPhrases/de.json",
            "intents/balance/balance.json",
        ],
        "lex-v2": [
            "Manifest.json",
            "DemoBank/Bot.json",
            "DemoBank/BotLocales/en_US/BotLocale.json",
            "DemoBank/BotLocales/en_US/Intents/FallbackIntent/Intent.json",
            "DemoBank/BotLocales/en_US/Intents/CardLost/Slots/CardType/Slot.json",
            "DemoBank/BotLocales/en_US/SlotTypes/CardTypes/SlotType.json",
            "DemoBank/BotLocales/de_DE/BotLocale.json",
            "DemoBank/BotLocales/de_DE/Intents/CardLost/Intent.json",
        ],
    }[fmt]
    assert {p: after[p] for p in untouched} == {p: before[p] for p in untouched}
    if fmt == "dialogflow-es":  # the annotated phrase keeps its entity part and id
        phrases = json.loads(after["intents/card.lost_usersays_en.json"])
        assert phrases[0] == es_files()["intents/card.lost_usersays_en.json"][0]
        assert "intents/balance_usersays_en.json" not in after
    if fmt == "dialogflow-cx":
        phrases = json.loads(after["intents/card.lost/trainingPhrases/en.json"])["trainingPhrases"]
        assert (
            phrases[0]
            == cx_files()["intents/card.lost/trainingPhrases/en.json"]["trainingPhrases"][0]
        )
    if fmt == "lex-v2":  # the intent keeps its slots and closing response
        lost = json.loads(after["DemoBank/BotLocales/en_US/Intents/CardLost/Intent.json"])
        was = lex_files()["DemoBank/BotLocales/en_US/Intents/CardLost/Intent.json"]
        assert {k: v for k, v in lost.items() if k != "sampleUtterances"} == {
            k: v for k, v in was.items() if k != "sampleUtterances"
        }


@pytest.mark.parametrize(
    ("fmt", "kept"),
    [
        ("dialogflow-cx-json", ["flows"]),
        ("watson", ["entities", "dialog_nodes", "metadata", "name", "description"]),
        ("luis", ["entities", "patterns", "desc", "culture"]),
        ("clu", ["metadata"]),
    ],
)
def test_parts_of_a_json_agent_the_app_does_not_model_come_back_unchanged(fmt, kept):
    _, data, parsed = _read(fmt)
    rows, intents = _edited(fmt, parsed)
    before = json.loads(data)
    after = json.loads(write_agent(fmt, rows, intents, kept=parsed.agent)[0])
    assert {k: after[k] for k in kept} == {k: before[k] for k in kept}
    if fmt == "watson":
        assert after["intents"][0]["examples"][0] == before["intents"][0]["examples"][0]
    if fmt == "luis":
        assert after["utterances"][0] == before["utterances"][0]
    if fmt == "clu":  # entities, the German utterance and the entity labels stay
        assert after["assets"]["entities"] == before["assets"]["entities"]
        assert after["assets"]["utterances"][:3] == before["assets"]["utterances"][:3]
    if fmt == "dialogflow-cx-json":
        lost = after["intents"][1]
        assert lost["parameters"] == before["intents"][1]["parameters"]
        german = before["intents"][1]["trainingPhrases"][2]
        assert lost["trainingPhrases"][:3] == before["intents"][1]["trainingPhrases"]  # de kept
        assert german["languageCode"] == "de"


def test_an_intent_deleted_in_the_project_leaves_the_agent_with_its_files():
    _suffix, _, parsed = _read("dialogflow-es")
    rows = [r for r in parsed.rows if r.labels != ("balance",)]
    intents = {n: d for n, d in _intents(parsed).items() if n != "balance"}
    payload, notes = write_agent("dialogflow-es", rows, intents, kept=parsed.agent)
    files = unzipped(payload)
    assert not [p for p in files if p.startswith("intents/balance")]
    assert "Left out 1 intent(s) deleted in the project: balance." in notes
    assert "intents/Default Welcome Intent.json" in files  # never imported: not deleted


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_banking77_slice_exported_to_each_format_reads_back_the_same(shared_data, fmt):
    train = read_any(shared_data / "banking77" / "train_10shot_seed0.csv").rows
    test = read_any(shared_data / "banking77" / "test.csv").rows[:150]
    rows = train + [
        Row(r.text, r.labels, "test") for r in test if r.text not in {t.text for t in train}
    ]
    intents = {n: "" for r in rows for n in r.labels}
    payload, notes = write_agent(fmt, rows, intents, name="banking77")
    back = read_any(payload, suffix=".zip" if agent_format(fmt).container == "zip" else ".json")
    # Lex and Watson take no '?' in a name: 'reverted_card_payment?' is written (and said) so;
    # Lex's export keeps the name in its name map (issue 66 item 4), so it comes back
    platform = agent_format(fmt).name_rule
    renamed = {n: platform(n) for n in intents if platform(n) != n}
    assert set(renamed) <= {"reverted_card_payment?"}
    if renamed:
        assert any("'reverted_card_payment?' -> 'reverted_card_payment'" in n for n in notes)
    if fmt == "lex-v2":
        renamed = {}
    expected = [(r.text, tuple(renamed.get(n, n) for n in r.labels)) for r in rows]
    assert sorted((r.text, r.labels) for r in back.rows) == sorted(expected)
    assert back.agent is not None and back.agent.format == fmt
    said = any("test-split" in n for n in notes)
    assert said == (fmt != "clu")  # CLU keeps the test split (its Test dataset)
    if fmt == "clu":
        assert {r.text for r in back.rows if r.split == "test"} == {
            r.text for r in rows if r.split == "test"
        }


def test_an_agent_from_another_platform_is_not_mixed_into_the_export():
    _, _, parsed = _read("luis")
    payload, notes = write_agent("watson", parsed.rows, _intents(parsed), kept=parsed.agent)
    assert (
        "The project came from a LUIS app: the Watson Assistant skill starts from an empty agent."
        in notes
    )
    doc = json.loads(payload)
    assert "patterns" not in doc and doc["counterexamples"] == [{"text": "what is the weather"}]


def test_a_name_the_platform_refuses_is_mapped_on_export_and_said():
    rows = [Row("my card is lost", ("card lost / stolen",))]
    payload, notes = write_agent("lex-v2", rows, {"card lost / stolen": ""})
    assert (
        "1 intent name(s) are not valid on the platform and were written as: 'card lost / stolen' -> 'card_lost_stolen'."
        in notes
    )
    # and its name map brings the project's name back (issue 66 item 4)
    assert read_any(payload, suffix=".zip").rows == [
        Row("my card is lost", ("card lost / stolen",))
    ]


def test_kept_sources_of_unknown_formats_start_empty():
    rows = [Row("hi", ("greet",))]
    payload, notes = write_agent("luis", rows, {"greet": ""}, kept=AgentSource("nope", b"{}"))
    assert notes[0] == "The LUIS app starts from an empty agent."
    assert json.loads(payload)["utterances"] == [{"text": "hi", "intent": "greet", "entities": []}]


def test_the_test_agents_are_written_as_an_export_writes_changed_files():
    assert dumps({"a": [1]}) == b'{\n  "a": [\n    1\n  ]\n}'


@pytest.mark.parametrize("fmt", FORMATS)
def test_an_intent_renamed_in_the_project_keeps_its_platform_intent(fmt):
    suffix, data, parsed = _read(fmt)
    lost = EXPECTED[fmt][1].labels[0]
    rows = [
        Row(r.text, ("lost_or_stolen",) if r.labels == (lost,) else r.labels, r.split)
        for r in parsed.rows
    ]
    intents = {("lost_or_stolen" if n == lost else n): d for n, d in _intents(parsed).items()}
    payload, notes = write_agent(fmt, rows, intents, kept=parsed.agent)
    assert any(
        n.startswith(f"Intent 'lost_or_stolen' holds 2 of the 2 phrase(s) of the agent's {lost!r}")
        for n in notes
    )
    if suffix == ".zip":
        assert unzipped(payload) == unzipped(data)  # the same agent: nothing else changed
    else:
        assert payload == data


# The German phrases of each agent that has some, and the language (Lex: locale) to ask for.
GERMAN = {
    "dialogflow-es": ("de", "Ich habe meine Karte verloren"),
    "dialogflow-cx": ("de", "Ich habe meine Karte verloren"),
    "dialogflow-cx-json": ("de", "Ich habe meine Karte verloren"),
    "lex-v2": ("de_DE", "Karte verloren"),
    "clu": ("de", "Ich habe meine Karte verloren"),
}


@pytest.mark.parametrize("fmt", list(GERMAN))
def test_another_language_is_read_and_written_back_into_that_language(fmt):
    suffix, data = BUILDERS[fmt]()
    language, text = GERMAN[fmt]
    parsed = read_any(data, suffix=suffix, language=language.upper())
    assert [r.text for r in parsed.rows] == [text]
    assert parsed.agent is not None and parsed.agent.language == language  # as the agent has it
    rows = [*parsed.rows, Row("Karte gestohlen", parsed.rows[0].labels)]
    payload, _ = write_agent(fmt, rows, _intents(parsed), kept=parsed.agent)
    again = read_any(payload, suffix=suffix, language=language)
    assert [r.text for r in again.rows] == [text, "Karte gestohlen"]
    english = read_any(payload, suffix=suffix)  # the default language is as it was
    assert key(english.rows) == key(EXPECTED[fmt])


@pytest.mark.parametrize("fmt", ["watson", "luis", "lex-v2"])
def test_a_language_the_agent_lacks_is_refused_naming_those_it_has(fmt):
    suffix, data = BUILDERS[fmt]()
    with pytest.raises(FormatError) as err:
        read_any(data, suffix=suffix, language="fr")
    (_, msg), *_ = err.value.problems
    has = {"watson": "en", "luis": "en-us", "lex-v2": "de_DE, en_US"}[fmt]
    what = "locale" if fmt == "lex-v2" else "language"
    assert msg == f"the agent has no {what} 'fr'; it has {has}"


def test_a_language_asked_of_a_file_that_is_no_agent_is_said():
    parsed = read_any(b"text,label\nhola,saludo\n", suffix=".csv", language="es")
    assert parsed.notes == ["The language 'es' applies to agent exports; this CSV was read."]
