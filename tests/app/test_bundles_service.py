"""Bundles from the app: export a version, load it without the app, same predictions as the app;
open a bundle as a read-only project; the CLI around it; interchange formats through the app."""

from __future__ import annotations

import re
import zipfile

import pytest

from app import worker
from app.cli import main
from app.services.labelling import data as data_svc
from app.services.models import predict as predict_svc
from app.services.models.versions import history
from app.services.projects import bundles as svc
from app.services.projects import export as export_svc
from app.services.projects import io as io_svc
from app.services.projects.io import destination
from app.services.projects.projects import project_names
from app.services.training import retrain_jobs
from core.bundle import BundleError, load
from storage.errors import StorageError
from tests.handles import live
from tests.samples import QUICK, make_tiny

QUERIES = ["I can't find my card anywhere", "how much cash is in my account", "hey there"]


def same_predictions(app_out: list[dict], bundle_out: list[dict]) -> None:
    for a, b in zip(app_out, bundle_out, strict=True):
        assert a["top"] == b["top"]
        assert a["score"] == pytest.approx(b["score"], abs=1e-4)
        assert [n["text"] for n in a["neighbours"]] == [n["text"] for n in b["neighbours"]]


# The demo shop's questions, said otherwise, and questions it has no intent for.
IN_SCOPE = [
    "where is my parcel", "I forgot my password", "can I speak to a person",
    "my package still hasn't shown up", "has my order been dispatched yet",
    "the tracking page has not changed in a week", "I need to change the address for delivery",
    "please ship it to my office instead", "can you cancel what I ordered yesterday",
    "I don't want the order anymore", "how do I send back these shoes",
    "the jacket doesn't fit, can I return it", "when will my refund arrive",
    "I returned it two weeks ago and still no money", "my card keeps getting declined",
    "the payment did not go through", "is this sofa in stock", "do you have it in size 42",
    "when will the blue one be available again", "my discount code is not working",
    "the promo code says expired", "can I use two coupons", "I can't log in to my account",
    "reset my password please", "the reset email never came", "let me talk to a real human",
    "I want an agent", "transfer me to customer service", "where's my stuff",
    "cancel my order and refund me", "change the delivery address of order 1234",
    "why was I charged twice", "is the lamp back in stock", "how long does a refund take",
    "the code WELCOME10 does nothing",
]  # fmt: skip
OUT_OF_SCOPE = [
    "what's the weather like tomorrow", "tell me a joke", "who won the football match",
    "what is the capital of Peru", "play some jazz", "how tall is mount everest",
    "translate hello into german", "what time is it in Tokyo", "recommend a good movie",
    "how do I bake sourdough bread", "set an alarm for 7am", "what is 17 times 23",
    "who wrote war and peace", "is it going to snow", "book me a flight to Rome",
]  # fmt: skip


def test_frozen_bundle_predicts_like_the_app_and_its_predict_py_too(serving_state, demo, tmp_path):
    """A bundle of the demo project (anchors, out-of-scope thresholds) answers 50 questions as
    the app does, loaded by the app and run by its own predict.py with onnxruntime, tokenizers
    and numpy alone; its fp32 ONNX encoder is the only copy of the weights it carries."""
    from tests.core.bundle.test_standalone import assert_same, run_predict_py

    out = tmp_path / "demo.zip"
    info = svc.export_bundle(serving_state.live, demo, out)
    assert info["model_version"] is None and info["exemplars"] > 100
    names = zipfile.ZipFile(out).namelist()
    assert {"predict.py", "onnx/model.onnx", "onnx/tokenizer.json"} <= set(names)
    assert not [n for n in names if n.endswith(".safetensors")]
    texts = IN_SCOPE + OUT_OF_SCOPE
    assert len(texts) == 50
    app = predict_svc.predict(serving_state.live, demo, texts)
    with load(out) as predictor:
        assert predictor.manifest["method"] == "frozen"
        assert predictor.manifest["thresholds"] and predictor.manifest["anchors"]
        same_predictions(app, predictor.predict(texts))
        card = (predictor.root / "README.md").read_text()
    assert_same(app, run_predict_py(out, texts, tmp_path))  # 50 of 50
    oos = {row["text"] for row in app if row["oos"]}
    assert len(oos & set(OUT_OF_SCOPE)) >= 10 and len(oos & set(IN_SCOPE)) <= 5
    assert "python bundle/predict.py" in card and "out of scope" in card
    assert "prototype" in card and '[0]["top"]' not in card


@pytest.mark.slow
def test_trained_version_bundle_matches_the_app_and_opens_read_only(serving_state, tmp_path):
    make_tiny(serving_state)
    job, _ = retrain_jobs.request_retrain(
        serving_state.training, live(serving_state, "tiny"), QUICK, enqueue=False
    )
    worker.execute_job(serving_state, job.id)
    version = retrain_jobs.job(serving_state.training, job.id).model_version_id
    from app.services.models.versions import activate

    activate(serving_state.factories, live(serving_state, "tiny"), version)
    out = tmp_path / "tiny.zip"
    info = svc.export_bundle(serving_state.live, live(serving_state, "tiny"), out)
    assert info["model_version"] == version
    app_out = predict_svc.predict(serving_state.live, live(serving_state, "tiny"), QUERIES)
    with load(out) as predictor:
        assert predictor.manifest["model_version"] == version
        assert predictor.manifest["encoder_kind"] == "full"
        same_predictions(app_out, predictor.predict(QUERIES))

    name = svc.import_bundle(serving_state.factories, out)
    assert name == "tiny (bundle)"
    same_predictions(
        app_out, predict_svc.predict(serving_state.live, live(serving_state, name), QUERIES)
    )
    assert [h["method"] for h in history(serving_state.db, live(serving_state, name))] == [
        "convfit"
    ]
    with pytest.raises(StorageError, match="read-only"):
        data_svc.add_utterance(serving_state.db, live(serving_state, name), "new text", "balance")

    # fp32: the version's safetensors once, its ONNX graph reading their bytes beside them
    from tests.core.bundle.test_standalone import assert_same, run_predict_py

    files = {i.filename: i.file_size for i in zipfile.ZipFile(out).infolist()}
    weights = sum(size for n, size in files.items() if n.endswith(".safetensors"))
    assert files["encoder/model.onnx"] < 1e6 and "onnx/model.onnx" not in files
    assert out.stat().st_size < weights + 5e6
    assert_same(app_out, run_predict_py(out, QUERIES, tmp_path))
    # int8: the int8 graph alone, no fp32 weights; the app predicts with it, predict.py too,
    # and it cannot become a project (nothing to serve and measure in fp32)
    small = tmp_path / "tiny-int8.zip"
    assert svc.export_bundle(serving_state.live, live(serving_state, "tiny"), small, int8=True)[
        "int8"
    ]
    names = zipfile.ZipFile(small).namelist()
    assert "onnx/model.int8.onnx" in names and "predict.py" in names
    assert not [n for n in names if n.endswith(".safetensors") or n.startswith("encoder/")]
    assert small.stat().st_size < weights / 2
    with load(small) as predictor:
        assert predictor.manifest["encoder_kind"] == "onnx"
        assert_same(predictor.predict(QUERIES), run_predict_py(small, QUERIES, tmp_path))
    projects = project_names(serving_state.db)
    with pytest.raises(ValueError, match="int8 ONNX only"):
        svc.import_bundle(serving_state.factories, small)
    assert project_names(serving_state.db) == projects


def test_a_tampered_bundle_imports_nothing(serving_state, demo, tmp_path):
    out = tmp_path / "demo.zip"
    svc.export_bundle(serving_state.live, demo, out)
    bad = tmp_path / "bad.zip"
    with zipfile.ZipFile(out) as src, zipfile.ZipFile(bad, "w") as dst:
        for item in src.infolist():
            data = src.read(item)
            if item.filename == "exemplars.jsonl":  # its sha256 in the manifest no longer matches
                data = data.replace(b"where is my order", b"WHERE is my order")
            dst.writestr(item, data)
    projects = project_names(serving_state.db)
    with pytest.raises(ValueError, match=r"exemplars\.jsonl"):
        svc.import_bundle(serving_state.factories, bad)
    assert project_names(serving_state.db) == projects
    assert not list(serving_state.settings.artifacts_dir.glob("imported/*"))


def test_bundle_cli_export_then_predict(tmp_path, capsys):
    d = ["--data-dir", str(tmp_path / "d")]
    src = tmp_path / "shop.csv"
    src.write_text(
        "text,label\nwhere is my order,track\nhas my parcel shipped,track\n"
        "refund please,refund\nI want my money back,refund\n",
        encoding="utf-8",
    )
    assert main([*d, "import", str(src), "--project", "shop"]) == 0
    out = tmp_path / "shop.zip"
    assert main([*d, "bundle", "export", "--project", "shop", "-o", str(out)]) == 0
    capsys.readouterr()
    assert main(["predict", "--bundle", str(out), "--format", "jsonl", "give me my money"]) == 0
    assert '"top": "refund"' in capsys.readouterr().out
    assert main([*d, "bundle", "export", "--project", "shop", "-o", str(tmp_path / "x.txt")]) == 2
    assert "ending in .zip" in capsys.readouterr().err


@pytest.mark.parametrize("target", ["nlu.yml", "intents.zip", "folder"])
def test_interchange_formats_round_trip_through_a_project(serving_state, demo, tmp_path, target):
    out = tmp_path / target
    n = export_svc.export_project(serving_state.db, demo, out).rows
    labelled = sorted(
        (r.text, r.labels) for r in export_svc.export_rows(serving_state.db, demo) if r.labels
    )
    assert n > 0
    result = io_svc.import_file(serving_state.db, destination(serving_state.db, "copy"), out)
    assert result.inserted == len(labelled)
    copied = sorted(
        (r.text, r.labels)
        for r in export_svc.export_rows(serving_state.db, live(serving_state, "copy"))
    )
    assert copied == labelled


@pytest.fixture(scope="module")
def adapter_bundle(tmp_path_factory, encoder):
    from tests.core.bundle.test_weights import write_adapter_bundle

    return write_adapter_bundle(tmp_path_factory.mktemp("adapter"), encoder)


def test_a_sound_adapter_bundle_becomes_the_active_version(serving_state, adapter_bundle):
    name = svc.import_bundle(serving_state.factories, adapter_bundle)
    assert [h["method"] for h in history(serving_state.db, live(serving_state, name))] == ["lora"]
    assert (
        predict_svc.predict(serving_state.live, live(serving_state, name), ["I lost my card"])[0][
            "top"
        ]
        == "lost_card"
    )


def test_a_bundle_whose_weights_cannot_load_imports_nothing(
    serving_state, adapter_bundle, tmp_path
):
    from tests.core.bundle.test_weights import ADAPTER, Q_A, edit_tensors, rewrite

    bad = rewrite(adapter_bundle, tmp_path / "bad.zip", edit_tensors(ADAPTER, lambda t: t.pop(Q_A)))
    projects = project_names(serving_state.db)
    with pytest.raises(BundleError, match=r"lacks 1 tensor\(s\) of the base encoder 'minilm'"):
        svc.import_bundle(serving_state.factories, bad)
    assert project_names(serving_state.db) == projects
    assert not list(serving_state.settings.artifacts_dir.glob("imported/*"))


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        ("base_encoder", "error: Unknown encoder '/etc': a base encoder must be one of minilm"),
        ("header", "error: adapter_model.safetensors is not a safetensors file: its header claims"),
    ],
)
def test_cli_refuses_a_bad_bundle_in_one_line(adapter_bundle, tmp_path, capsys, mutate, message):
    from tests.core.bundle.test_weights import ADAPTER, rewrite, set_manifest

    def huge_header(m: dict[str, bytes]) -> None:
        m[ADAPTER] = (2**40).to_bytes(8, "little") + m[ADAPTER][8:]

    change = set_manifest(base_encoder="/etc") if mutate == "base_encoder" else huge_header
    bad = rewrite(adapter_bundle, tmp_path / "bad.zip", change)
    d = ["--data-dir", str(tmp_path / "d")]
    capsys.readouterr()
    assert main([*d, "bundle", "import", str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(message) and "\n" not in err and "Traceback" not in err
    assert main(["predict", "--bundle", str(bad), "where is my card"]) == 2
    assert capsys.readouterr().err.strip().startswith(message)
    assert main([*d, "projects"]) == 0
    assert "bundle" not in capsys.readouterr().out  # nothing was imported


def test_opening_a_bundle_in_a_team_tells_nothing_of_hidden_projects_and_is_bounded(
    tmp_path, monkeypatch
):
    """Issue 56, row 7: opening a bundle said a project of the name it wanted existed, though
    the designer could not see it ("A project named 'shop (bundle)' already exists"), and a
    designer could create any number of bundle projects she could not see. Now her project's
    name never depends on projects she cannot see, she is its member (so she sees it), and she
    holds at most a few such projects at once."""
    from app.access.auth import acting_as
    from app.services.projects.members import actor_of
    from app.services.projects.projects import new_project
    from tests.app.live import PROJECT, team_context

    serving_state = team_context(tmp_path / "data")
    try:
        bundle = tmp_path / "shop.zip"
        svc.export_bundle(serving_state.live, live(serving_state, PROJECT), bundle)
        new_project(serving_state.db, "shop (bundle)")  # the admin's; dana is no member
        dana = actor_of(serving_state.db, "dana")
        monkeypatch.setattr(svc, "BUNDLES", 2)
        with acting_as(dana):
            opened = [svc.import_bundle(serving_state.factories, bundle) for _ in range(2)]
            with pytest.raises(StorageError, match="dana already has 2 projects opened from"):
                svc.import_bundle(serving_state.factories, bundle)
            seen = project_names(serving_state.db)
        for name in opened:
            assert re.fullmatch(r"shop \(bundle [0-9a-f]{8}\)", name), name
            assert name in seen
        assert "shop (bundle)" not in seen
        assert (
            len(project_names(serving_state.db)) == 4
        )  # shop, the admin's and dana's two: no third
    finally:
        serving_state.close()
