"""Intent names in import files follow the storage rules (issue 27, rows 7 and 8): a NUL or a
control character is refused with its line; NFC and NFD spellings of one text or name are one. An
invisible character (zero width, bidi control, variation selector) no longer refuses the file
when read: such a label may name an existing intent, onto which the import maps it (issue 43;
tests/app/formats/test_names_on_import.py); as a new name it is refused when imported."""

from __future__ import annotations

import json

import pytest

from app.formats import FormatError, parse_csv, parse_jsonl, parse_rasa_yaml
from app.formats.common import merge_repeats

NFC, NFD = "caf\u00e9", "cafe\u0301"


@pytest.mark.parametrize(
    ("name", "says"),
    [("gre\x00et", "NUL"), ("greet\x07", "control character (U+0007"), ("\u3164", "visible")],
)
def test_a_hidden_character_in_an_intent_name_is_refused_with_its_line(name, says):
    csv_data = f"text,label\nhello there,greet\nhi you,{name}\n".encode()
    jsonl = f'{{"text": "hello there", "label": "greet"}}\n{json.dumps({"text": "hi", "label": name})}\n'
    yaml = f"nlu:\n- intent: greet\n  examples: |\n    - hello\n- intent: '{name}'\n  examples: |\n    - hi\n"
    for parse, data, line in (
        (parse_csv, csv_data, 3),
        (parse_jsonl, jsonl.encode(), 2),
        (parse_rasa_yaml, yaml.encode(), 5),
    ):
        with pytest.raises(FormatError) as err:
            parse(data)
        if parse is parse_rasa_yaml and name in ("gre\x00et", "greet\x07"):  # YAML has no NUL
            assert "#x" in str(err.value)
            continue
        assert (line, err.value.problems[0][1]) == err.value.problems[0]
        assert says in err.value.problems[0][1], err.value.problems


def test_nfc_and_nfd_spellings_in_a_file_are_one_text_and_one_name():
    data = f"text,label\nun {NFC},{NFC}\nun {NFD},{NFD}\n".encode()
    parsed = parse_csv(data)
    assert [(r.text, r.labels) for r in merge_repeats(parsed)[0]] == [(f"un {NFC}", (NFC,))]


@pytest.mark.parametrize("name", ["greet\u200b", "\u202egreet", "greet\ufe00"])
def test_an_invisible_character_in_a_label_is_read_for_the_import_to_map(name):
    data = f"text,label\nhello there,greet\nhi you,{name}\n".encode()
    assert [r.labels for r in parse_csv(data)] == [("greet",), (name,)]


DEVICES = ["CON", "nul", "com1", "AUX.help", "lpt9", "greet"]


def _members(path) -> list[str]:
    import zipfile

    if path.is_dir():
        return [p.relative_to(path).as_posix() for p in path.rglob("*")]
    with zipfile.ZipFile(path) as z:
        return z.namelist()


EXPORTS = [(".zip", None), ("", None)] + [(".zip", f) for f in ("dialogflow-es", "dialogflow-cx")]


@pytest.mark.parametrize(("suffix", "fmt"), [*EXPORTS, (".zip", "lex-v2")])
def test_windows_device_names_are_never_file_or_folder_names_and_come_back(tmp_path, suffix, fmt):
    """Issue 56 row 15: intents called CON, nul, com1 or AUX.help were written as file and
    folder names (Windows cannot extract them). They are mapped, said, and read back as they
    were."""
    from app.formats import Row, read_any, write_any
    from app.formats.file_names import is_device_name

    rows = [Row(f"example {i}", (name,)) for i, name in enumerate(DEVICES)]
    path = tmp_path / f"out{suffix}"
    notes = write_any(rows, path, {n: "" for n in DEVICES}, format=fmt, name="con")
    parts = [part for member in _members(path) for part in member.split("/")]
    assert not [p for p in parts if is_device_name(p)], parts
    # Lex writes ASCII letters, digits and _ (AUX.help as AUX_help), and its name map brings the
    # project's names back (issue 66 item 4)
    expected = sorted((r.text, r.labels) for r in rows)
    assert sorted((r.text, r.labels) for r in read_any(path).rows) == expected
    said = next(n for n in notes if "Windows device names" in n)
    assert said.startswith(f"{5 if fmt != 'lex-v2' else 4} intent(s) are Windows device names")
