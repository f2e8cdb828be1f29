"""Agents through the CLI and the import/export services: the format is found by content and
named, the agent is kept with the project, and the export writes it back with the project's
changes (and only those)."""

from __future__ import annotations

import json

from app.cli import main
from app.cli.data import AGENT_FORMAT_NAMES
from app.formats import AGENT_FORMATS
from app.services.projects.export import export_project
from app.services.projects.io import destination, import_file
from storage.agents import kept_agent
from storage.projects import get_project
from tests.app.formats.agents import dialogflow_es, lex_v2, unzipped, watson
from tests.handles import live


def test_the_cli_offers_every_agent_format():
    assert tuple(f.name for f in AGENT_FORMATS) == AGENT_FORMAT_NAMES


def test_an_agent_imported_and_exported_by_the_cli_comes_back_unchanged(tmp_path, capsys):
    _, data = dialogflow_es()
    src = tmp_path / "bank-agent"  # no suffix: recognised by its content
    src.write_bytes(data)
    d = ["--data-dir", str(tmp_path / "data")]
    assert main([*d, "import", str(src), "--project", "bank"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Read as Dialogflow ES agent. Imported 4 utterance(s)")
    assert "Kept the rest of the Dialogflow ES agent (what the app does not model)" in out

    zipped = tmp_path / "out.zip"
    assert main([*d, "export", "--project", "bank", "-o", str(zipped)]) == 0
    assert f"to {zipped} as Dialogflow ES agent." in capsys.readouterr().out
    assert unzipped(zipped.read_bytes()) == unzipped(data)

    lex = tmp_path / "lex.zip"
    assert main([*d, "export", "--project", "bank", "-o", str(lex), "--format", "lex-v2"]) == 0
    said = capsys.readouterr().out
    assert "as Amazon Lex V2 bot." in said and "came from a Dialogflow ES agent" in said
    assert "'card.lost' -> 'card_lost'" in said  # Lex takes no '.' in a name
    assert "DemoBank" not in str(list(unzipped(lex.read_bytes())))  # a new bot, named 'bank'
    assert "bank/BotLocales/en_US/Intents/card_lost/Intent.json" in unzipped(lex.read_bytes())

    csv = tmp_path / "out.csv"
    assert main([*d, "export", "--project", "bank", "-o", str(csv)]) == 0
    assert "as CSV." in capsys.readouterr().out


def test_a_json_export_needs_its_format_named(tmp_path, capsys):
    src = tmp_path / "in.csv"
    src.write_text("text,label\nhi,greet\n")
    d = ["--data-dir", str(tmp_path / "data")]
    assert main([*d, "import", str(src), "--project", "p"]) == 0
    assert "Read as CSV." in capsys.readouterr().out
    assert main([*d, "export", "--project", "p", "-o", str(tmp_path / "x.json")]) == 2
    assert "Name the agent format of a .json file: luis, clu" in capsys.readouterr().err
    out = tmp_path / "w.json"
    assert main([*d, "export", "--project", "p", "-o", str(out), "--format", "watson"]) == 0
    assert json.loads(out.read_text())["intents"] == [
        {"intent": "greet", "examples": [{"text": "hi"}]}
    ]


def test_work_done_in_the_project_is_exported_into_the_kept_agent(serving_state, tmp_path):
    _, data = watson()
    src = tmp_path / "skill.json"
    src.write_bytes(data)
    res = import_file(serving_state.db, destination(serving_state.db, "bank"), src)
    assert res.format == "Watson Assistant skill" and res.inserted == 4
    with serving_state.db.session() as s:
        assert kept_agent(s, get_project(s, "bank").id).content == data
    more = tmp_path / "more.csv"
    more.write_text(
        "text,label,description\nsomeone took my wallet,card_lost,\n"
        "activate my card,card_activate,The customer wants to start using a card\n"
    )
    import_file(serving_state.db, destination(serving_state.db, "bank"), more)
    out = tmp_path / "out.json"
    result = export_project(serving_state.db, live(serving_state, "bank"), out)
    assert result.format == "Watson Assistant skill" and result.rows == 6
    after, before = json.loads(out.read_text()), json.loads(data)
    assert after["dialog_nodes"] == before["dialog_nodes"]
    assert after["entities"] == before["entities"]
    lost, _, new = after["intents"]
    assert lost["examples"][0] == before["intents"][0]["examples"][0]  # mentions kept
    assert lost["examples"][-1] == {"text": "someone took my wallet"}
    assert new == {
        "intent": "card_activate",
        "examples": [{"text": "activate my card"}],
        "description": "The customer wants to start using a card",
    }


def test_the_cli_imports_another_locale_and_exports_it_back(tmp_path, capsys):
    _, data = lex_v2()
    src = tmp_path / "bot.zip"
    src.write_bytes(data)
    d = ["--data-dir", str(tmp_path / "data")]
    assert main([*d, "import", str(src), "--project", "bot", "--language", "de_DE"]) == 0
    assert "Imported 1 utterance(s)" in capsys.readouterr().out
    out = tmp_path / "out.zip"
    assert main([*d, "export", "--project", "bot", "-o", str(out)]) == 0
    assert unzipped(out.read_bytes()) == unzipped(data)
    assert main([*d, "import", str(src), "--project", "x", "--language", "fr_FR"]) == 2
    assert "the agent has no locale 'fr_FR'; it has de_DE, en_US" in capsys.readouterr().err
