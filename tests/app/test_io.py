from __future__ import annotations

import json

import pytest

from app.formats import FormatError
from app.services.labelling import data as data_svc
from app.services.projects.export import export_project
from app.services.projects.io import destination, import_file
from tests.handles import live


def _write(tmp_path, name, content: bytes | str):
    p = tmp_path / name
    p.write_bytes(content.encode() if isinstance(content, str) else content)
    return p


def _count(serving_state, project="p"):
    try:
        return len(data_svc.table(serving_state.db, live(serving_state, project)))
    except Exception:
        return None  # project does not exist


GOOD = "text,label\nwhere is my parcel,track\ncancel it,cancel\n"


def test_csv_and_jsonl_import_into_new_and_existing_project(serving_state, tmp_path):
    res = import_file(
        serving_state.db, destination(serving_state.db, "p"), _write(tmp_path, "a.csv", GOOD)
    )
    assert (res.inserted, res.intents_created) == (2, ["cancel", "track"])
    lines = [
        {"text": "refund me", "labels": ["refund", "cancel"], "split": "test"},
        {"text": "hi", "labels": [], "split": "unlabelled"},
    ]
    jl = "\n".join(json.dumps(x) for x in lines)
    assert (
        import_file(
            serving_state.db, destination(serving_state.db, "p"), _write(tmp_path, "b.jsonl", jl)
        ).inserted
        == 2
    )
    rows = {r["text"]: r for r in data_svc.table(serving_state.db, live(serving_state, "p"))}
    assert rows["refund me"]["intents"] == "cancel|refund" and rows["refund me"]["split"] == "test"
    assert rows["hi"]["split"] == "unlabelled"


BAD_FILES = [
    ("missing.csv", "text,intent\nhello,x\n", "Missing columns"),
    ("empty.csv", "text,label\n   ,x\nok,y\n", "line 2: empty text"),
    ("long.csv", "text,label\n" + "a" * 2001 + ",x\n", "line 2: text is 2001 characters"),
    ("utf8.csv", b"text,label\nok,x\ncaf\xe9,y\n", "not valid UTF-8"),
    ("split.csv", "text,label,split\nok,x,dev\n", "unknown split 'dev'"),
    ("twice.csv", "text,labels\nok,a|a\n", "the same intent twice"),
    ("none.csv", "text,label\n", "no rows"),
    ("bad.jsonl", '{"text": "ok", "label": "x"}\nnot json\n', "line 2: not valid JSON"),
    ("bad.xlsx", "whatever", "Unsupported file type"),
]


@pytest.mark.parametrize(("name", "content", "message"), BAD_FILES)
def test_bad_files_are_refused_and_change_nothing(serving_state, tmp_path, name, content, message):
    import_file(
        serving_state.db, destination(serving_state.db, "p"), _write(tmp_path, "seed.csv", GOOD)
    )
    before = data_svc.table(serving_state.db, live(serving_state, "p"))
    with pytest.raises(FormatError, match=message) as info:
        import_file(
            serving_state.db, destination(serving_state.db, "p"), _write(tmp_path, name, content)
        )
    assert "Nothing was imported" in str(info.value)
    assert data_svc.table(serving_state.db, live(serving_state, "p")) == before


def test_bad_file_into_new_project_creates_no_project(serving_state, tmp_path):
    with pytest.raises(FormatError):
        import_file(
            serving_state.db,
            destination(serving_state.db, "fresh"),
            _write(tmp_path, "x.csv", "text,label\n,x\n"),
        )
    assert _count(serving_state, "fresh") is None


def test_a_50_mb_file_is_refused_before_reading(serving_state, tmp_path):
    p = tmp_path / "big.csv"
    with p.open("wb") as fh:
        fh.write(b"text,label\n")
        fh.truncate(50 * 1024 * 1024)
    with pytest.raises(FormatError, match="limit is 25 MB"):
        import_file(serving_state.db, destination(serving_state.db, "p"), p)
    assert _count(serving_state) is None


def test_problems_report_line_numbers_of_the_first_few(serving_state, tmp_path):
    body = "text,label\n" + "".join(f" ,x{i}\n" for i in range(20))
    with pytest.raises(FormatError) as info:
        import_file(
            serving_state.db, destination(serving_state.db, "p"), _write(tmp_path, "many.csv", body)
        )
    msg = str(info.value)
    assert "line 2: empty text" in msg and "and 12 more" in msg


def test_unknown_intents_can_be_refused(serving_state, tmp_path):
    import_file(
        serving_state.db, destination(serving_state.db, "p"), _write(tmp_path, "a.csv", GOOD)
    )
    with pytest.raises(ValueError, match="not intents of this project: brand_new"):
        import_file(
            serving_state.db,
            destination(serving_state.db, "p"),
            _write(tmp_path, "b.csv", "text,label\nnew,brand_new\n"),
            create_missing_intents=False,
        )


def test_export_then_import_round_trips(serving_state, tmp_path, demo):
    for suffix in ("csv", "jsonl"):
        out = tmp_path / f"demo.{suffix}"
        n = export_project(serving_state.db, demo, out).rows
        import_file(serving_state.db, destination(serving_state.db, f"copy-{suffix}"), out)
        strip = lambda rows: sorted((r["text"], r["intents"], r["split"]) for r in rows)  # noqa: E731
        assert n == len(data_svc.table(serving_state.db, demo))
        assert strip(
            data_svc.table(serving_state.db, live(serving_state, f"copy-{suffix}"))
        ) == strip(data_svc.table(serving_state.db, demo))


def test_repeated_texts_are_merged_and_disagreements_reported_not_refused(serving_state, tmp_path):
    content = "text,label\nsame,x\nother,y\nsame,x\nsame,z\nhi,greet\nhi,greet\n"
    result = import_file(
        serving_state.db, destination(serving_state.db, "p"), _write(tmp_path, "dups.csv", content)
    )
    assert result.inserted == 3
    rows = {
        r["text"]: r["intents"] for r in data_svc.table(serving_state.db, live(serving_state, "p"))
    }
    assert rows == {"same": "x|z", "other": "y", "hi": "greet"}  # every intent it was given
    message = result.message()
    assert "Merged 2 repeated utterance(s)" in message
    assert "with all of them (multi-label): 'same' (x + z)" in message


def test_texts_already_in_the_project_are_skipped_and_counted(serving_state, tmp_path):
    import_file(
        serving_state.db, destination(serving_state.db, "p"), _write(tmp_path, "seed.csv", GOOD)
    )
    before = data_svc.table(serving_state.db, live(serving_state, "p"))
    again = import_file(
        serving_state.db, destination(serving_state.db, "p"), _write(tmp_path, "seed.csv", GOOD)
    )
    assert (again.inserted, again.skipped) == (0, len(before))
    assert f"skipped {len(before)} already in the project" in again.message()
    assert data_svc.table(serving_state.db, live(serving_state, "p")) == before


@pytest.mark.parametrize("path", ["banking77/test.csv", "nlupp/hotels.csv"])
def test_real_files_with_repeats_import_as_they_are(serving_state, shared_data, path):
    result = import_file(
        serving_state.db, destination(serving_state.db, "real"), shared_data / path
    )
    assert result.inserted > 0
    assert any("Merged" in n or "different intents" in n for n in result.notes)


@pytest.mark.parametrize("suffix", ["csv", "jsonl", "yml"])
def test_descriptions_round_trip_with_an_intent_that_has_no_examples_yet(
    serving_state, tmp_path, suffix
):
    import_file(
        serving_state.db, destination(serving_state.db, "src"), _write(tmp_path, "a.csv", GOOD)
    )
    data_svc.describe_intent(
        serving_state.db, live(serving_state, "src"), "track", "Where is my parcel, is it late"
    )
    data_svc.create_intent(
        serving_state.db, live(serving_state, "src"), "refund", "Money back for a returned order"
    )
    out = tmp_path / f"src.{suffix}"
    export_project(serving_state.db, live(serving_state, "src"), out)
    res = import_file(serving_state.db, destination(serving_state.db, f"copy-{suffix}"), out)
    assert "refund" in res.intents_created and res.described == 2
    described = {
        i["name"]: (i["description"], i["n_train"])
        for i in data_svc.intents(serving_state.db, live(serving_state, "src"))
    }
    copied = {
        i["name"]: (i["description"], i["n_train"])
        for i in data_svc.intents(serving_state.db, live(serving_state, f"copy-{suffix}"))
    }
    assert copied == described
    assert copied["refund"] == ("Money back for a returned order", 0)
    assert copied["cancel"] == ("", 1)


def test_a_description_column_describes_the_rows_intent_and_declares_one_without_text(
    serving_state, tmp_path
):
    csv = (
        "text,label,description\n"
        "where is my parcel,track,Parcel tracking\n"
        "is it shipped yet,track,\n"
        ",refund,Money back\n"
    )
    res = import_file(
        serving_state.db, destination(serving_state.db, "d"), _write(tmp_path, "d.csv", csv)
    )
    assert res.inserted == 2 and "described 2 intent(s)" in res.message()
    got = {
        i["name"]: i["description"]
        for i in data_svc.intents(serving_state.db, live(serving_state, "d"))
    }
    assert got == {"track": "Parcel tracking", "refund": "Money back"}


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("text,label,description\nhi,a,One\nhello,a,Two\n", "line 3: intent 'a' has another"),
        ("text,labels,description\nhi,a|b,Both\n", "line 2: a description needs exactly one"),
        ("text,label,description\nhi,a," + "x" * 501 + "\n", "at most 500 characters"),
    ],
)
def test_bad_descriptions_are_refused_with_their_line_and_nothing_is_imported(
    serving_state, tmp_path, content, message
):
    with pytest.raises(FormatError, match=message):
        import_file(
            serving_state.db,
            destination(serving_state.db, "bad"),
            _write(tmp_path, "bad.csv", content),
        )
    assert _count(serving_state, "bad") is None


def test_a_rasa_intent_item_carries_its_description_in_metadata(tmp_path):
    from app.formats import dump_rasa_yaml, parse_rasa_yaml
    from app.formats.common import Row

    text = dump_rasa_yaml([Row("hi", ("greet",))], {"greet": "Saying hello", "bye": "Leaving"})
    assert '- intent: greet\n  metadata: {description: "Saying hello"}\n' in text
    parsed = parse_rasa_yaml(text.encode())
    assert parsed.descriptions == {"bye": "Leaving", "greet": "Saying hello"}
    assert [r.text for r in parsed.rows] == ["hi"]


def test_a_csv_with_a_quote_left_open_imports_nothing(serving_state, tmp_path):
    import_file(
        serving_state.db, destination(serving_state.db, "p"), _write(tmp_path, "seed.csv", GOOD)
    )
    before = data_svc.table(serving_state.db, live(serving_state, "p"))
    rows = [f"question {i} about my parcel,track" for i in range(40)]
    rows[12] = '"where did my parcel go, it is late,track'  # the closing quote forgotten
    body = "text,label\n" + "\n".join(rows) + "\n"
    with pytest.raises(FormatError, match="line 14: a quote opened on this line is never closed"):
        import_file(
            serving_state.db, destination(serving_state.db, "p"), _write(tmp_path, "open.csv", body)
        )
    assert data_svc.table(serving_state.db, live(serving_state, "p")) == before
