from __future__ import annotations

import csv
import io
import json
import subprocess
import sys

import pytest

from app.cli import main

SUBCOMMANDS = [
    "serve",
    "import",
    "export",
    "predict",
    "projects",
    "bundle",
    "report",
    "clusters",
    "settings",
    "team",
    "delete",
    "undo",
    "activity",
]


@pytest.mark.fast  # make check runs it (issue 76 item 4)
def test_help_does_not_import_torch_or_gradio():
    """Nor any database, web or model code (issue 63 item 5: it loaded 375 modules, SQLAlchemy
    among them, through the CLI's output escaping)."""
    code = (
        "import sys\n"
        "from app.cli import main\n"
        "try:\n"
        "    main(['--help'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "heavy = sorted({'torch', 'gradio', 'sentence_transformers', 'sqlalchemy', 'numpy',"
        " 'starlette', 'fastapi', 'storage', 'onnxruntime'} & set(sys.modules))\n"
        "print('heavy imports:', heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "usage: intent-studio" in out.stdout
    assert out.stdout.strip().splitlines()[-1] == "heavy imports: []"


# What a local project's `train` and `predict` must run without (issue 59 item 6): the web door,
# S3, the figures, the queue and what they bring. A GPU box without them could not start them.
WEB_S3_PLOTS = (
    *("starlette", "gradio", "fastapi", "uvicorn", "anyio"),
    *("boto3", "botocore", "plotly", "colorcet", "cryptography", "brotli", "huey", "redis"),
)
OWN_WEB_MODULES = ("app.web", "app.api", "app.ui", "app.plots", "app.perimeter.upload_gate")

LOCAL_TRAIN_AND_PREDICT = """
import json, sys
for name in json.loads(sys.argv[1]):
    sys.modules[name] = None  # as on a machine without it: importing it fails
import app.cli, app.serving.state, app.serving.models, app.services.models.predict, core.training
print("torch before an encoder loads:", "torch" in sys.modules)
from app.cli import main
d = ["--data-dir", sys.argv[2]]
assert main([*d, "import", sys.argv[3], "--project", "shop"]) == 0
assert main([*d, "predict", "--project", "shop", "--format", "jsonl", "where is my order"]) == 0
assert main([*d, "train", "--project", "shop", "--set", "epochs=1"]) == 0
own = sorted(m for m in sys.modules if m.startswith(tuple(json.loads(sys.argv[4]))))
print("web, S3 or plots loaded:", own + [m for m in json.loads(sys.argv[1]) if sys.modules[m]])
"""


def test_a_local_train_and_predict_run_without_web_s3_or_plots_code(tmp_path):
    """One process with none of those packages importable (how a GPU box without them, or the
    CLI that must not pay for them, sees them): predict and train a local project, and none
    of the app's web or figure modules loaded; reading a version imports no torch either (a
    version serving its int8 copy predicts without it)."""
    src = tmp_path / "in.csv"
    rows = {
        "track": ["where is my parcel", "track my order", "has my package shipped", "where is it"],
        "cancel": ["cancel my order", "stop the order please", "I want to cancel", "cancel it"],
        "refund": ["I want my money back", "refund please", "how do I get a refund", "refund"],
    }
    src.write_text(
        "text,label,split\n"
        + "".join(
            f"{t},{label},{'test' if i == 3 else 'train'}\n"
            for label, texts in rows.items()
            for i, t in enumerate(texts)
        )
    )
    args = [json.dumps(WEB_S3_PLOTS), str(tmp_path / "data"), str(src)]
    args.append(json.dumps(OWN_WEB_MODULES))
    done = subprocess.run(
        [sys.executable, "-c", LOCAL_TRAIN_AND_PREDICT, *args], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    assert "torch before an encoder loads: False" in lines
    assert json.loads(next(x for x in lines if x.startswith('{"text"')))["top"] == "track"
    assert "[succeeded]" in done.stdout
    assert lines[-1] == "web, S3 or plots loaded: []"


@pytest.mark.parametrize("sub", SUBCOMMANDS)
def test_every_subcommand_has_help(sub, capsys):
    with pytest.raises(SystemExit) as info:
        main([sub, "--help"])
    assert info.value.code == 0
    assert "usage: intent-studio" in capsys.readouterr().out


def test_import_predict_export_round_trip(tmp_path, capsys):
    src = tmp_path / "in.csv"
    src.write_text(
        "text,labels,split\nwhere is my parcel,track,train\ntrack my order,track,train\n"
        "cancel my order,cancel,train\nstop the order please,cancel,train\nhi there,,unlabelled\n"
    )
    d = ["--data-dir", str(tmp_path / "data")]
    assert main([*d, "import", str(src), "--project", "shop"]) == 0
    assert "Imported 5 utterance(s)" in capsys.readouterr().out

    assert (
        main(
            [
                *d,
                "predict",
                "--project",
                "shop",
                "--format",
                "jsonl",
                "where is my order",
                "cancel it",
            ]
        )
        == 0
    )
    results = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["top"] for r in results] == ["track", "cancel"]
    assert results[0]["neighbours"][0]["text"] in {"where is my parcel", "track my order"}

    out = tmp_path / "out.csv"
    assert main([*d, "export", "--project", "shop", "-o", str(out)]) == 0
    with src.open() as a, out.open() as b:
        assert sorted(map(tuple, csv.reader(a))) == sorted(map(tuple, csv.reader(b)))


def test_bad_import_exits_non_zero_with_the_message_and_writes_nothing(tmp_path, capsys):
    bad = tmp_path / "bad.csv"
    bad.write_text("text,label\nok,x\n,y\n")
    d = ["--data-dir", str(tmp_path / "data")]
    assert main([*d, "import", str(bad), "--project", "shop"]) == 2
    err = capsys.readouterr().err
    assert "line 3: empty text" in err and "Nothing was imported" in err
    assert main([*d, "projects"]) == 0
    assert "shop" not in capsys.readouterr().out


def test_predict_reads_a_file_of_texts(tmp_path, capsys):
    d = ["--data-dir", str(tmp_path / "data")]
    src = tmp_path / "in.csv"
    src.write_text("text,label\nwhere is my parcel,track\ncancel my order,cancel\n")
    main([*d, "import", str(src), "--project", "p"])
    capsys.readouterr()
    texts = tmp_path / "texts.txt"
    texts.write_text("where's my stuff\n\ncancel that\n")
    assert main([*d, "predict", "--project", "p", "--input", str(texts), "--format", "csv"]) == 0
    rows = list(csv.DictReader(capsys.readouterr().out.splitlines()))
    assert [r["intent"] for r in rows] == ["track", "cancel"]


def test_data_dir_can_come_from_the_environment(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("INTENT_STUDIO_DATA_DIR", str(tmp_path / "envdata"))
    src = tmp_path / "in.csv"
    src.write_text("text,label\na,x\nb,y\n")
    assert main(["import", str(src), "--project", "p"]) == 0
    assert (tmp_path / "envdata" / "studio.db").exists()


def test_report_writes_an_offline_html_file(tmp_path, capsys):
    d = ["--data-dir", str(tmp_path / "d")]
    src = tmp_path / "shop.csv"
    src.write_text(
        "text,label,split\nwhere is my order,track,train\nhas my parcel shipped,track,train\n"
        "refund please,refund,train\nI want my money back,refund,train\n"
        "is my package on its way,track,test\ngive me my money,refund,test\n",
        encoding="utf-8",
    )
    assert main([*d, "import", str(src), "--project", "shop"]) == 0
    out = tmp_path / "report.html"
    assert main([*d, "report", "--project", "shop", "-o", str(out)]) == 0
    page = out.read_text(encoding="utf-8")
    assert "shop" in page and "is my package on its way" in page
    assert "<script src=" not in page
    assert "of the 2 test questions go to the right intent" in page
    static = tmp_path / "static.html"
    assert main([*d, "report", "--project", "shop", "-o", str(static), "--static"]) == 0
    assert "<script" not in static.read_text(encoding="utf-8")
    assert main([*d, "report", "--project", "shop", "-o", str(tmp_path / "r.pdf")]) == 2


@pytest.mark.slow
def test_train_names_convfit_and_takes_fast_its_older_name(tmp_path, capsys):
    """Issue 55: the CLI names ConvFiT Stage 2 (``--method convfit``, the default) and says in a
    line what it is; ``--method fast``, its name before, still trains it; an unknown method is
    refused with the names it takes."""
    with pytest.raises(SystemExit):
        main(["train", "--help"])
    helped = " ".join(capsys.readouterr().out.split())
    assert "convfit (the default; fast, its older name, still works) = ConvFiT Stage 2" in helped
    # and what the measurement found (issue 55: the paper's recipe's learning curve)
    assert "beat the paper's own pair recipe at 25-200 steps on BANKING77 and CLINC150" in helped
    d = ["--data-dir", str(tmp_path / "d")]
    src = tmp_path / "shop.csv"
    src.write_text(
        "text,label,split\nwhere is my order,track,train\nhas my parcel shipped,track,train\n"
        "refund please,refund,train\nI want my money back,refund,train\n"
        "is my package on its way,track,test\ngive me my money,refund,test\n",
        encoding="utf-8",
    )
    assert main([*d, "import", str(src), "--project", "shop"]) == 0
    assert main([*d, "train", "--project", "shop", "--method", "convfit2"]) == 2
    assert "Unknown method 'convfit2': use convfit (ConvFiT Stage 2" in capsys.readouterr().err
    quick = ["--set", "epochs=1", "--set", "batch_size=2"]
    assert main([*d, "train", "--project", "shop", "--method", "fast", *quick]) == 0
    out = capsys.readouterr().out
    assert out.startswith(
        "ConvFiT Stage 2: contrastive task-tuning of the sentence encoder; in-batch ranking loss "
        "(it beat the paper's own pair recipe at 25-200 steps on BANKING77 and CLINC150)\n"
    )
    assert json.loads(out[out.index("{") :])["method"] == "convfit"


def test_two_imports_into_one_new_project_at_once_both_land_without_a_traceback(tmp_path):
    """Red-team row 10: two CLI imports into one project at once; one used to crash."""
    rows = [(f"utterance number {i} about topic {i % 7}", f"topic_{i % 7}") for i in range(3000)]
    src = tmp_path / "rows.csv"
    with src.open("w", newline="") as f:
        csv.writer(f).writerows([("text", "label"), *rows])
    data = tmp_path / "data"
    main(["--data-dir", str(data), "projects"])  # the schema first: then both race on the rows
    cmd = [sys.executable, "-m", "app", "--data-dir", str(data), "import", str(src)]
    procs = [
        subprocess.Popen(
            [*cmd, "--project", "Falcon"], stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        for _ in range(2)
    ]
    outs = [(p.wait(300), *(s.decode() for s in p.communicate())) for p in procs]
    for code, out, err in outs:
        assert "Traceback" not in err and "[SQL" not in err + out
        assert code == 0 or (code == 2 and "busy" in err), (code, out, err)
    assert any(code == 0 for code, _, _ in outs)
    export = tmp_path / "out.csv"
    assert main(["--data-dir", str(data), "export", "--project", "Falcon", "-o", str(export)]) == 0
    with export.open() as f:
        assert sorted(r["text"] for r in csv.DictReader(f)) == sorted(t for t, _ in rows)


def test_settings_refuse_a_bad_switch_and_an_unknown_project(tmp_path, capsys):
    d = ["--data-dir", str(tmp_path / "d")]
    assert main([*d, "settings", "--project", "nope", "--set", "serve_int8=off"]) == 2
    assert "nope" in capsys.readouterr().err
    src = tmp_path / "rows.csv"
    src.write_text("text,label\nhello,greet\nbye,leave\n")
    assert main([*d, "import", str(src), "--project", "p"]) == 0
    capsys.readouterr()
    assert main([*d, "settings", "--project", "p", "--set", "serve_int8=maybe"]) == 2
    assert "serve_int8 is 'on' or 'off', not 'maybe'" in capsys.readouterr().err
    for gone in ("oos", "anchors", "context", "int8"):  # one `settings` command instead
        with pytest.raises(SystemExit):
            main([gone, "--project", "p"])
        assert "invalid choice" in capsys.readouterr().err


def test_a_slot_book_file_imports_into_a_project_and_a_bad_one_exits_2(tmp_path, capsys):
    d = ["--data-dir", str(tmp_path / "data")]
    src = tmp_path / "nlu.yml"
    src.write_text(
        'version: "3.1"\nnlu:\n- intent: book\n  examples: |\n    - fly to [Rome](city)\n'
        "    - a flight to Oslo\n- intent: hi\n  examples: |\n    - hello\n    - hi\n"
    )
    assert main([*d, "import", str(src), "--project", "trip"]) == 0
    assert "Kept 1 entity annotation" in capsys.readouterr().out
    slots = tmp_path / "slots.yml"
    slots.write_text("slot_book:\n  city: [Oslo]\ntemplates:\n  book: ['go to {city}']\n")
    assert main([*d, "import", str(slots), "--project", "trip"]) == 0
    assert "1 new template(s)" in capsys.readouterr().out
    bad = tmp_path / "bad.yml"
    bad.write_text("templates:\n  book: ['go {day}']\n")
    assert main([*d, "import", str(bad), "--project", "trip"]) == 2
    err = capsys.readouterr().err
    assert "slot book lacks: day" in err and "Traceback" not in err
    out = tmp_path / "out.yml"
    assert main([*d, "export", "--project", "trip", "-o", str(out)]) == 0
    text = out.read_text()
    assert "- fly to [Rome](city)" in text and "- lookup: city" in text


def test_one_utterance_is_deleted_and_undone_from_the_command_line(tmp_path, capsys):
    """Issue 56 row 17: the CLI could not delete one utterance, nor undo anything. It does both
    through the Data tab's services and front door: the row comes back under its id."""
    src = tmp_path / "in.csv"
    src.write_text(
        "text,labels,split\nwhere is my parcel,track,train\ntrack my order,track,test\n"
        "cancel my order,cancel,train\n"
    )
    d = ["--data-dir", str(tmp_path / "data")]
    assert main([*d, "import", str(src), "--project", "shop"]) == 0
    capsys.readouterr()

    def rows() -> dict[str, tuple[int, str]]:
        from app.access import open_project
        from app.access.auth import LOCAL
        from app.config import load_settings
        from app.serving.state import ServingState
        from storage.utterances import list_utterances

        serving_state = ServingState.open(load_settings(tmp_path / "data"))
        try:
            p = open_project(serving_state.db, "shop", LOCAL)
            with serving_state.db.session() as s:
                return {u.text: (u.id, "|".join(u.labels)) for u in list_utterances(s, p.id)}
        finally:
            serving_state.close()

    before = rows()
    parcel = before["where is my parcel"][0]
    assert main([*d, "delete", str(parcel), "--project", "shop"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"Deleted #{parcel} 'where is my parcel' (track, train)")
    assert "where is my parcel" not in rows()

    # a test row needs --confirm-test; by its text
    assert main([*d, "delete", "--text", "track my order", "--project", "shop"]) == 2
    err = capsys.readouterr().err
    assert "is a test utterance" in err and "Add --confirm-test to delete it." in err
    assert "track my order" in rows()
    assert main([*d, "delete", "--text", "nope", "--project", "shop"]) == 2
    assert "No utterance 'nope' in this project." in capsys.readouterr().err
    args = ["delete", "--text", "track my order", "--project", "shop", "--confirm-test"]
    assert main([*d, *args]) == 0
    capsys.readouterr()

    assert main([*d, "activity", "--project", "shop"]) == 0
    listed = [line.split("\t") for line in capsys.readouterr().out.splitlines()]
    assert [(r[2], r[3], r[5]) for r in listed] == [
        ("delete", "1", "can be undone"),
        ("delete", "1", "can be undone"),
        ("import", "3", "can be undone"),
    ]
    first_delete = listed[1][6]

    assert main([*d, "undo", "--project", "shop"]) == 0  # the last change: the test row's delete
    assert "Undid delete of 'track my order': back to track." in capsys.readouterr().out
    assert main([*d, "undo", "--project", "shop", "--batch", first_delete]) == 0
    assert "Undid delete of 'where is my parcel'" in capsys.readouterr().out
    assert rows() == before  # the same rows, under the same ids


@pytest.mark.parametrize("terminal", [False, True], ids=["pipe", "terminal"])
def test_the_cli_writes_control_characters_of_stored_texts_as_escapes(
    tmp_path, capsys, monkeypatch, terminal
):
    """Issue 56, row 9: a text holding ESC and CR was printed raw by the CLI (``\\x1b[2J``
    clears an admin's terminal, ``\\r`` rewrites the line). Issue 64: on a terminal only, while
    ``intent-studio predict … | cat`` still printed them raw. On any stream every control
    character of the text output is written as ``\\uXXXX``; JSON lines and CSV keep the text
    exact (JSON's own escapes; CSV's quotes); the text is stored as it came."""
    monkeypatch.setattr(sys.stdout, "isatty", lambda: terminal)  # capsys's stream is a pipe
    d = ["--data-dir", str(tmp_path / "data")]
    hostile = "where is my parcel \x1b[2J\x1b]0;owned\x07\rroot# \x9b31m \x7f\u2028 again"
    src = tmp_path / "in.csv"
    src.write_text(f'text,label\n"{hostile}",track\ncancel my order,cancel\n', encoding="utf-8")
    assert main([*d, "import", str(src), "--project", "p"]) == 0
    capsys.readouterr()
    texts = tmp_path / "texts.txt"
    texts.write_text("where is my parcel\n")
    assert main([*d, "predict", "--project", "p", "--input", str(texts)]) == 0
    out = capsys.readouterr().out
    assert "\\u001b[2J" in out and "\\u000droot" in out and "\\u009b31m" in out
    assert not any(c in out for c in "\x1b\r\x07\x9b\x7f\u2028")
    assert main([*d, "predict", "--project", "p", "--input", str(texts), "--format", "jsonl"]) == 0
    out = capsys.readouterr().out
    assert not any(c in out for c in "\x1b\r\x07\x9b\x7f\u2028")  # JSON's escapes, no raw byte
    line = json.loads(out.splitlines()[0])  # still JSON, the text intact
    assert hostile in [n["text"] for n in line["neighbours"]]
    assert main([*d, "predict", "--project", "p", "--input", str(texts), "--format", "csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out, newline="")))
    assert rows[0]["nearest_example"].lstrip("'") == hostile  # CSV keeps every character


PREDICT_WITHOUT_TORCH = """
import json, sys
sys.modules["torch"] = None  # as on a machine without it: importing it fails
from app.cli import main
assert main(["--data-dir", sys.argv[1], "predict", "--project", "b", "--format", "jsonl",
             *json.loads(sys.argv[2])]) == 0
"""


def test_predict_on_a_never_retrained_project_serves_the_base_int8_copy_without_torch(
    tmp_path, shared_data, monkeypatch
):
    """Issue 63 item 5: a project that was never retrained served its base encoder in fp32
    (torch, 19 s for 1,000 lines on an AVX2 CPU). The first predict builds the base encoder's
    int8 copy (its parity checked on the project's test questions, kept in the data directory);
    every later one predicts with it, in a process where torch cannot be imported."""
    import csv

    monkeypatch.setenv("INTENT_STUDIO_INT8", "on")
    with (shared_data / "banking77" / "train_10shot_seed0.csv").open() as fh:
        shots = [r for r in csv.DictReader(fh) if r["label"] < "card_d"]  # 13 intents
    src = tmp_path / "b.csv"
    splits = ["test" if i % 10 >= 7 else "train" for i in range(len(shots))]  # 3 of 10 test
    with src.open("w", newline="") as fh:
        out = csv.writer(fh)
        out.writerow(["text", "label", "split"])
        out.writerows(
            [r["text"], r["label"], split] for r, split in zip(shots, splits, strict=True)
        )
    d = ["--data-dir", str(tmp_path / "data")]
    assert main([*d, "import", str(src), "--project", "b"]) == 0
    texts = ["my card has not arrived yet", "how do I activate my new card"]
    assert main([*d, "predict", "--project", "b", "--format", "jsonl", *texts]) == 0
    base = next((tmp_path / "data" / "artifacts" / "base").iterdir())
    record = json.loads((base / "int8.json").read_text())
    assert record["passed"] and record["n"] == splits.count("test"), record
    # it serves every never-retrained project on this base: it says whose rows checked it
    assert record["checked_on"] == {"project": "b", "questions": record["n"]}  # issue 73 item 11
    done = subprocess.run(
        [sys.executable, "-c", PREDICT_WITHOUT_TORCH, str(tmp_path / "data"), json.dumps(texts)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    tops = [json.loads(line)["top"] for line in done.stdout.splitlines()]
    assert tops == ["card_arrival", "activate_my_card"]


def test_ctrl_c_while_train_follows_its_job_waits_for_the_jobs_thread(
    tmp_path, tiny_encoder, monkeypatch, capsys
):
    """Ctrl+C while ``train`` ran its job here cancelled it and returned at once, the job's
    thread still inside a training step: the process then aborted ("terminate called without an
    active exception", exit -6, 2 of 4 tries on BANKING77). Python 3.11's ``join()`` interrupted
    by Ctrl+C marks the running thread as stopped, so the join meant to wait for it returned
    at once. Here the job's thread takes 0.5 s to stop once cancelled, as one in a step does."""
    import os
    import signal
    import threading
    import time

    from app import worker
    from app.config import load_settings
    from app.services.training import retrain_jobs
    from app.serving.state import ServingState
    from tests.samples import make_tiny

    data = tmp_path / "data"
    serving_state = ServingState.open(load_settings(data))
    make_tiny(serving_state, encoder=tiny_encoder)
    serving_state.close()
    started, stopped = threading.Event(), threading.Event()

    def slow_to_stop(state, job_id, **_):
        started.set()
        while retrain_jobs.job(state.training, job_id).status != "cancelled":
            time.sleep(0.05)
        time.sleep(0.5)  # the step under way
        stopped.set()

    def ctrl_c() -> None:
        started.wait(60)
        time.sleep(0.3)  # train is following the job, one second at a time
        os.kill(os.getpid(), signal.SIGINT)

    monkeypatch.setattr(worker, "execute_job", slow_to_stop)
    # Ctrl+C as a terminal has it (a suite started in the background has SIGINT ignored)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        threading.Thread(target=ctrl_c, daemon=True).start()
        code = main(["--data-dir", str(data), "train", "--project", "tiny"])
    finally:
        signal.signal(signal.SIGINT, previous)
    assert "[cancelled]" in capsys.readouterr().out
    assert code == 1
    assert stopped.is_set(), "train returned while its job's thread was still stopping"
