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
import zipfile
from pathlib import Path

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
