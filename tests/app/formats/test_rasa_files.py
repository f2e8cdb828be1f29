"""Issue 66 item 3: a Rasa ``nlu.yml`` comes back as it went out. Re-exporting an imported file
added ``lookup:`` tables unasked (the values its annotations already carry), wrote a phrase
under two intents as a new intent ``check_balance+search_transactions``, dropped its
``synonym:`` maps without a word and merged repeated lines. The project now keeps the file and an
export writes the project back into it: unedited, the same bytes; edited, only what changed.
Every file written is checked with Rasa's own schema of the format and its validator (pykwalify:
``tests/data/rasa_schema``, Rasa's files under Apache-2.0; Rasa 3.6 does not install on Python
3.11), and, where ``RASA_PYTHON`` names a Python with Rasa installed, read by Rasa's own reader."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from pykwalify.core import Core
from pykwalify.errors import SchemaError
from ruamel.yaml import YAML

from app.cli import main
from app.formats import Row, read_any, write_any
from core.slots import EntitySpan, SlotData
from tests.app.formats.rows import key

pytestmark = pytest.mark.fast

DATA = Path(__file__).resolve().parents[2] / "data"
FIXTURE = DATA / "rasa_bank_nlu.yml"
SCHEMA = DATA / "rasa_schema"
SHARED = "what places have I spent money?"  # under check_balance and search_transactions


def rasa_schema_problems(text: str) -> list[str]:
    """What Rasa's validator says of a file: its ``nlu.yml`` schema with ``responses.yml``
    merged in, through pykwalify (rasa/shared/utils/validation.py); [] when valid."""
    yaml = YAML(typ="safe", pure=True)
    schema = yaml.load((SCHEMA / "nlu.yml").read_text())
    schema.update(yaml.load((SCHEMA / "responses.yml").read_text()))
    core = Core(source_data=yaml.load(text), schema_data=schema)
    try:
        core.validate(raise_exception=True)
    except SchemaError:
        return list(core.errors) or ["invalid"]
    return []


def test_rasas_schema_refuses_what_rasa_refuses():
    assert rasa_schema_problems(FIXTURE.read_text()) == []
    bad = 'nlu:\n- intent: x\n  examples:\n  - txt: "a"\n'
    assert rasa_schema_problems(bad)


def test_an_unedited_rasa_import_exports_the_same_bytes(tmp_path, capsys):
    d = ["--data-dir", str(tmp_path / "data")]
    assert main([*d, "import", str(FIXTURE), "--project", "bank"]) == 0
    said = capsys.readouterr().out
    assert "Kept the rest of the Rasa NLU file" in said and "Kept 3 synonym item(s)" in said
    out = tmp_path / "out.yml"
    assert main([*d, "export", "--project", "bank", "-o", str(out)]) == 0
    assert out.read_bytes() == FIXTURE.read_bytes()
    # and again from a project that came from it
    assert main([*d, "import", str(out), "--project", "bank2"]) == 0
    again = tmp_path / "again.yml"
    assert main([*d, "export", "--project", "bank2", "-o", str(again)]) == 0
    assert again.read_bytes() == FIXTURE.read_bytes()


def _edited(rows: list[Row]) -> list[Row]:
    """The project after a designer's work: a phrase relabelled, an intent deleted, phrases
    and an intent added, a phrase given two intents."""
    out = []
    for r in rows:
        if r.text == "Balance please":
            out.append(Row(r.text, ("search_transactions",)))
        elif "transfer_money" not in r.labels:
            out.append(r)
    return [
        *out,
        Row("cheers, bye", ("goodbye",)),
        Row("what did I spend on coffee", ("search_transactions",)),
        Row("is it going to rain", ("out_of_scope",)),
        Row("hello and goodbye", ("goodbye", "greet")),
    ]


def test_an_edited_project_changes_only_what_it_changed_in_the_rasa_file(tmp_path):
    parsed = read_any(FIXTURE)
    rows = _edited(parsed.rows)
    described = {"transfer_money": ""}  # deleted: no description left
    out = tmp_path / "out.yml"
    notes = write_any(rows, out, described, parsed.slots, kept=parsed.agent)
    text = out.read_text()
    assert rasa_schema_problems(text) == []
    lines = FIXTURE.read_text().splitlines()
    kept_lines = text.splitlines()
    # the file's synonyms, regex, lookup table and comments, line for line
    tail = lines[lines.index("# other spellings of one value") :]
    at = kept_lines.index(tail[0])
    assert kept_lines[at : at + len(tail)] == tail
    assert lines[:6] == kept_lines[:6]
    assert "- lookup: account_type" not in text  # its values are annotated: nothing unasked
    # PERSON's values lost their phrases (transfer_money is deleted): the slot book's values
    # go where Rasa holds values no example writes
    assert kept_lines[at + len(tail) :] == ["- lookup: PERSON", "  examples: |", "    - John",
                                            "    - Jane Smith"]  # fmt: skip
    # the phrase the file held under two intents: under both, as it came; no new intent for it
    assert text.count(f"    - {SHARED}") == 2 and "check_balance+search_transactions" not in text
    # an unchanged block keeps its lines; a relabelled phrase left it, new ones join the end
    assert "    - Balance please" not in text.split("- intent: search_transactions")[0]
    search = text.split("- intent: search_transactions")[1].split("- intent:")[0]
    assert [line for line in search.splitlines() if line.startswith("    - ")][-3:] == [
        "    - show my [Starbucks](vendor_name) purchases",
        "    - Balance please",
        "    - what did I spend on coffee",
    ]
    assert "transfer_money" not in text and "- intent: out_of_scope" in text
    assert "- intent: goodbye+greet" in text
    assert any("intent_tokenization_flag: true" in n for n in notes)
    # read back: the project's rows, annotations and all
    back = read_any(out)
    assert {r.text: (r.labels, r.split) for r in back.rows} == {
        r.text: (r.labels, r.split) for r in rows
    }
    assert back.slots.entities == {
        t: e for t, e in parsed.slots.entities.items() if t in {r.text for r in rows}
    }


def test_a_multi_label_row_from_elsewhere_is_written_as_rasa_expects_and_read_back(tmp_path):
    rows = [Row("hi", ("greet",)), Row("hi, bye", ("goodbye", "greet")), Row("bye", ("goodbye",))]
    out = tmp_path / "multi.yml"
    notes = write_any(rows, out)
    assert "- intent: goodbye+greet" in out.read_text()
    assert any("'goodbye+greet', Rasa's multi-intent convention" in n for n in notes)
    assert rasa_schema_problems(out.read_text()) == []
    assert key(read_any(out).rows) == key(rows)


def test_a_fresh_rasa_file_adds_no_lookup_its_annotations_carry(tmp_path):
    """A slot book's values that annotated examples write are not repeated as ``lookup:``
    tables (Rasa would match them as a regex feature too); a value no example writes, and a
    value's synonyms, are written where Rasa has a place for them."""
    text = "fly to Berlin"
    slots = SlotData(
        book={"city": ["Berlin", "Paris"]},
        entities={text: [EntitySpan(7, 13, "city").to_dict()]},
        synonyms={"city": {"Paris": ["Paname"]}},
    )
    out = tmp_path / "fresh.yml"
    write_any([Row(text, ("book",))], out, {}, slots)
    written = out.read_text()
    assert "- fly to [Berlin](city)" in written
    assert "- lookup: city\n  examples: |\n    - Paris\n" in written
    assert "- synonym: Paris\n  examples: |\n    - Paname\n" in written
    assert rasa_schema_problems(written) == []
    back = read_any(out)
    assert back.slots.book == {"city": ["Berlin", "Paris"]}
    # a lookup: table lists Paris: its synonym: map comes back to it (issue 74 item 2: it was
    # kept with the file only, and left out of every other format without a word)
    assert back.slots.synonyms == {"city": {"Paris": ["Paname"]}}


RASA_PYTHON = os.environ.get("RASA_PYTHON")
READ_WITH_RASA = r"""
import json, sys
from rasa.shared.nlu.training_data.formats.rasa_yaml import RasaYAMLReader
data = RasaYAMLReader().reads(open(sys.argv[1], encoding="utf-8").read())
print(json.dumps({
    "examples": sorted(
        [m.get("text"), m.get("intent"),
         sorted((e["start"], e["end"], e["entity"], e.get("value"), e.get("role"))
                for e in m.get("entities") or [])]
        for m in data.training_examples),
    "synonyms": data.entity_synonyms,
    "regex": data.regex_features,
    "lookups": data.lookup_tables,
}))
"""


@pytest.mark.skipif(not RASA_PYTHON, reason="RASA_PYTHON names no Python with Rasa installed")
def test_rasas_own_reader_reads_our_files_as_we_do(tmp_path):
    """Rasa's RasaYAMLReader (a Python 3.10 with Rasa 3.6: ``RASA_PYTHON``) reads the exported
    file into the very examples, annotations, synonyms, regexes and lookup tables we read."""
    parsed = read_any(FIXTURE)
    out = tmp_path / "out.yml"
    write_any(_edited(parsed.rows), out, {}, parsed.slots, kept=parsed.agent)
    done = subprocess.run(
        [str(RASA_PYTHON), "-c", READ_WITH_RASA, str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    rasa = json.loads(done.stdout.splitlines()[-1])
    ours = read_any(out)
    spans = ours.slots.entities
    mine = sorted(
        [row.text, "+".join(labels), sorted(_entity(row.text, e) for e in spans.get(row.text, []))]
        for row in ours.rows
        for labels in _items_of(out.read_text(), row)
    )
    assert [[t, i, [list(e) for e in es]] for t, i, es in rasa["examples"]] == [
        [t, i, [list(e) for e in es]] for t, i, es in mine
    ]
    assert rasa["synonyms"] == {
        "credit card": "credit", "card": "credit", "emblm": "emblem",
        "balance": "current balance", "full balance": "current balance",
    }  # fmt: skip
    assert [r["name"] for r in rasa["regex"]] == ["account_number"]
    assert [t["name"] for t in rasa["lookups"]] == ["vendor_name", "PERSON"]


def _entity(text: str, span: dict) -> tuple:
    """A span as Rasa reads it (its value: the annotated text when it names none)."""
    value = span.get("value") or text[span["start"] : span["end"]]
    return (span["start"], span["end"], span["entity"], value, span.get("role"))


def _items_of(text: str, row: Row) -> list[tuple[str, ...]]:
    """The intent items (as written, ``a+b`` split) whose examples hold the row's text: Rasa
    reads one example per line, so a phrase under two intents is two examples."""
    found = []
    for chunk in text.split("- intent: ")[1:]:
        name, body = chunk.split("\n", 1)
        body = body.split("\n- ")[0]
        if any(_plain(line) == row.text for line in body.splitlines()):
            found.append(tuple(name.strip().split("+")))
    return found


def _plain(line: str) -> str:
    from app.formats.rasa_entities import read_markup

    line = line.strip()
    for lead in ("- text: ", "- "):
        if line.startswith(lead):
            raw = line[len(lead) :]
            if raw.startswith('"'):
                raw = json.loads(raw)
            return read_markup(raw)[0]
    return ""
