"""The Data tab's Import and Export with platform agents: the import names the format it read,
the Export radio offers every agent format and writes the one chosen (into the kept agent when it
is that format), and a plain .zip export stays a zip of intent files."""

from __future__ import annotations

import json
import zipfile

from app.formats import AGENT_FORMATS
from app.ui import data_manage
from tests.app.formats.agents import dialogflow_es, unzipped
from tests.handles import live


def test_the_export_radio_offers_every_agent_format():
    assert {name for _, name in data_manage.AGENT_CHOICES} == {f.name for f in AGENT_FORMATS}


def test_an_agent_imported_in_the_data_tab_exports_back_as_it_came(serving_state, tmp_path):
    _, data = dialogflow_es()
    src = tmp_path / "agent.zip"
    src.write_bytes(data)
    status, *_ = data_manage.do_import(serving_state, None, str(src), "bank", True)
    assert "Read as Dialogflow ES agent. Imported 4 utterance(s)" in status

    status, path = data_manage.do_export(
        serving_state, live(serving_state, "bank"), "dialogflow-es"
    )
    assert "as Dialogflow ES agent." in status and path is not None and path.endswith("bank.zip")
    with open(path, "rb") as fh:
        assert unzipped(fh.read()) == unzipped(data)

    status, path = data_manage.do_export(
        serving_state, live(serving_state, "bank"), "zip"
    )  # intent files, not the agent
    assert "as zip of intent files." in status
    assert path is not None
    with zipfile.ZipFile(path) as zf:
        assert sorted(zf.namelist()) == ["balance.txt", "card.lost.txt", "out_of_scope.txt"]

    status, path = data_manage.do_export(serving_state, live(serving_state, "bank"), "luis")
    assert "as LUIS app." in status and "starts from an empty agent" in status
    assert path is not None and path.endswith("bank.json")
    with open(path, encoding="utf-8") as fh:
        assert len(json.load(fh)["utterances"]) == 4


def test_the_data_tab_imports_an_agent_in_the_language_asked(serving_state, tmp_path):
    _, data = dialogflow_es()
    src = tmp_path / "agent.zip"
    src.write_bytes(data)
    status, *_ = data_manage.do_import(serving_state, None, str(src), "bank-de", True, " de ")
    assert "Imported 1 utterance(s) into 'bank-de'" in status
    status, *_ = data_manage.do_import(serving_state, None, str(src), "bank-fr", True, "fr")
    assert "the agent has no language &#x27;fr&#x27;; it has de, en" in status
