from __future__ import annotations

import zipfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.formats import (
    FormatError,
    Row,
    dump_intent_files,
    dump_rasa_yaml,
    parse_intent_files,
    parse_rasa_yaml,
    read_intent_folder,
    read_interchange,
    write_intent_folder,
    write_intent_zip,
)
from storage.utterances import is_blank

DATA = Path(__file__).resolve().parents[1] / "data"

ROWS = [
    Row("hello there", ("greet",)),
    Row("hey", ("greet",)),
    Row("how much do I have and send 20 to Ana", ("check_balance", "transfer_money")),
    Row("see you later", ("goodbye",)),
    Row("bye for now", ("goodbye",), "test"),
    Row("where is card/lost?", ("card/lost",)),
    Row("yes", ("yes",)),
    Row('quote "marks" and: colons # hash', ("odd name: with colon",)),
    Row("not labelled yet", (), "unlabelled"),
]
LABELLED = [r for r in ROWS if r.labels]


def _key(rows):
    return sorted(rows, key=lambda r: (r.text, r.labels, r.split))


def test_rasa_fixture_reads_with_notes():
    parsed = read_interchange(DATA / "rasa_nlu.yml")
    got = {r.text: r for r in parsed.rows}
    assert got["fly me to Berlin"].labels == ("book_flight",)
    assert got["a ticket to Paris please"].labels == ("book_flight",)
    assert got["how much do I have and send 20 to Ana"].labels == (
        "check_balance",
        "transfer_money",
    )
    assert got["bye for now"].split == "test"
    assert "pink pig" not in got
    assert parsed.flattened_entities == 2
    assert any("Flattened 2 entity" in n for n in parsed.notes)
    assert any("1 synonym" in n for n in parsed.notes)


def test_rasa_can_keep_entity_markup():
    parsed = parse_rasa_yaml((DATA / "rasa_nlu.yml").read_bytes(), keep_entity_markup=True)
    assert "fly me to [Berlin](city)" in {r.text for r in parsed.rows}
    assert parsed.flattened_entities == 0


def test_rasa_round_trip():
    text = dump_rasa_yaml(ROWS)
    assert text.startswith('version: "3.1"\nnlu:\n')
    assert "- intent: check_balance+transfer_money" in text
    assert "not labelled yet" not in text
    assert _key(parse_rasa_yaml(text.encode()).rows) == _key(LABELLED)


def test_rasa_bad_file_lists_every_problem():
    with pytest.raises(FormatError) as err:
        parse_rasa_yaml((DATA / "rasa_bad.yml").read_bytes())
    problems = err.value.problems
    assert (6, "duplicate of line 5: 'hey'") in problems
    assert (7, "an example line must start with '- ': 'not an example line'") in problems
    assert (8, "unknown key 'colour' in intent item") in problems
    assert "Nothing was imported." in str(err.value)


@pytest.mark.parametrize(
    ("doc", "match"),
    [
        (b"nlu:\n- intent: a\n  examples: |\n    - ok\n    - \xff\n", "not valid UTF-8"),
        (b"nlu: [\n", "not valid YAML"),
        (b"version: '3.1'\n", "no 'nlu:' section"),
        (b"nlu:\n- intent: a\n  examples: |\n    -  \n", "1 problem"),
        (b"stuff: 1\nnlu: []\n", "1 problem"),
        (b"nlu:\n- intent: a\n  examples: |\n    - " + b"x" * 2001 + b"\n", "1 problem"),
        (b"nlu:\n- intent: a|b\n  examples: |\n    - ok\n", "1 problem"),
        (
            b"nlu:\n- intent: a\n  examples: |\n    - same\n- intent: b\n  examples: |\n    - same\n",
            "1 problem",
        ),
    ],
)
def test_rasa_refuses(doc, match):
    with pytest.raises(FormatError, match=match):
        parse_rasa_yaml(doc)


def test_rasa_invalid_utf8_has_line_number():
    with pytest.raises(FormatError) as err:
        parse_rasa_yaml(b"nlu:\n- intent: a\n  examples: |\n    - \xff\n")
    assert err.value.problems[0][0] == 4


def test_intent_folder_round_trip(tmp_path):
    files = dump_intent_files(ROWS)
    assert "greet.txt" in files and "test/goodbye.txt" in files and "card%2Flost.txt" in files
    assert files["check_balance.txt"] == "how much do I have and send 20 to Ana\n"
    write_intent_folder(ROWS, tmp_path / "out")
    parsed = read_intent_folder(tmp_path / "out")
    assert _key(parsed.rows) == _key(LABELLED)
    assert any("multi-label" in n for n in parsed.notes)


def test_intent_zip_round_trip(tmp_path):
    z = tmp_path / "intents.zip"
    z.write_bytes(write_intent_zip(ROWS))
    assert _key(read_interchange(z).rows) == _key(LABELLED)


def test_zip_with_one_top_folder(tmp_path):
    z = tmp_path / "wrapped.zip"
    with zipfile.ZipFile(z, "w") as zf:
        zf.writestr("intents/greet.txt", "hi\n\nhello\n")
        zf.writestr("intents/.DS_Store", "junk")
        zf.writestr("__MACOSX/intents/._greet.txt", "junk")
    rows = read_intent_folder(z).rows
    assert rows == [Row("hi", ("greet",)), Row("hello", ("greet",))]


def test_intent_files_refuse_bad_content():
    with pytest.raises(FormatError) as err:
        parse_intent_files(
            {
                "greet.txt": b"hi\nhi\n",
                "bye.txt": b"ok\n\xfe\n",
                "notes.md": b"# readme",
                "x/y/z.txt": b"deep",
                "long.txt": ("x" * 2001).encode(),
            }
        )
    msgs = [m for _, m in err.value.problems]
    assert "greet.txt: duplicate of line 1: 'hi'" in msgs
    assert any(m.startswith("bye.txt: invalid byte") for m in msgs)
    assert any(m.startswith("notes.md: unexpected file") for m in msgs)
    assert any(m.startswith("x/y/z.txt: unexpected file") for m in msgs)
    assert any(m.startswith("long.txt: text is 2001 characters") for m in msgs)


def test_same_text_in_train_and_test_is_a_duplicate():
    with pytest.raises(FormatError, match="duplicate"):
        parse_intent_files({"a.txt": b"same\n", "test/b.txt": b"same\n"})


def test_hostile_zip_is_refused(tmp_path):
    z = tmp_path / "evil.zip"
    with zipfile.ZipFile(z, "w") as zf:
        zf.writestr("../greet.txt", "hi\n")
    with pytest.raises(FormatError, match=r"'\.\.'"):
        read_intent_folder(z)


def test_empty_inputs():
    with pytest.raises(FormatError, match="no utterances"):
        parse_intent_files({"a.txt": b"\n\n"})
    with pytest.raises(FormatError, match="Unsupported"):
        read_interchange(Path("x.csv"))


_name = (
    st.text(
        alphabet=st.characters(
            blacklist_categories=("Cs", "Cc", "Zl", "Zp"), blacklist_characters="|+"
        ),
        min_size=1,
        max_size=20,
    )
    .map(str.strip)
    .filter(bool)
)
_text = (
    st.text(
        alphabet=st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp", "Zs")) | st.just(" "),
        min_size=1,
        max_size=60,
    )
    .map(str.strip)
    .filter(lambda t: not is_blank(t) and "[" not in t)  # nothing-visible text is refused
)


@settings(max_examples=40, deadline=None)
@given(
    st.dictionaries(
        _text,
        st.tuples(st.sets(_name, min_size=1, max_size=2), st.sampled_from(["train", "test"])),
        min_size=1,
        max_size=8,
    )
)
def test_round_trips_property(data):
    rows = [Row(t, tuple(sorted(labels)), split) for t, (labels, split) in data.items()]
    assert _key(parse_rasa_yaml(dump_rasa_yaml(rows).encode()).rows) == _key(rows)
    files = {k: v.encode() for k, v in dump_intent_files(rows).items()}
    assert _key(parse_intent_files(files).rows) == _key(rows)
