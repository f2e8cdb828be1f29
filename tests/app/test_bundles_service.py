"""Bundles from the app: export a version, load it without the app, same predictions as the app;
open a bundle as a read-only project; the CLI around it; interchange formats through the app."""

from __future__ import annotations

import zipfile

import pytest

from app import worker
from app.cli import main
from app.services import bundles as svc
from app.services import data as data_svc
from app.services import io as io_svc
from app.services import predict as predict_svc
from app.services import retrain_jobs
from app.services.io import destination
from app.services.projects import project_names
from app.services.versions import history
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


def test_frozen_bundle_predicts_like_the_app(ctx, demo, tmp_path):
    out = tmp_path / "demo.zip"
    info = svc.export_bundle(ctx.live, demo, out)
    assert info["model_version"] is None and info["exemplars"] > 100
    queries = ["where is my parcel", "I forgot my password", "can I speak to a person"]
    with load(out) as predictor:
        assert predictor.manifest["method"] == "frozen"
        same_predictions(predict_svc.predict(ctx.live, demo, queries), predictor.predict(queries))


@pytest.mark.slow
def test_trained_version_bundle_matches_the_app_and_opens_read_only(ctx, tmp_path):
    make_tiny(ctx)
    job, _ = retrain_jobs.request_retrain(ctx.training, live(ctx, "tiny"), QUICK, enqueue=False)
    worker.execute_job(ctx, job.id)
    version = retrain_jobs.job(ctx.training, job.id).model_version_id
    from app.services.versions import activate

    activate(ctx.factories, live(ctx, "tiny"), version)
    out = tmp_path / "tiny.zip"
    info = svc.export_bundle(ctx.live, live(ctx, "tiny"), out)
    assert info["model_version"] == version
    app_out = predict_svc.predict(ctx.live, live(ctx, "tiny"), QUERIES)
    with load(out) as predictor:
        assert predictor.manifest["model_version"] == version
        assert predictor.manifest["encoder_kind"] == "full"
        same_predictions(app_out, predictor.predict(QUERIES))

    name = svc.import_bundle(ctx.factories, out)
    assert name == "tiny (bundle)"
    same_predictions(app_out, predict_svc.predict(ctx.live, live(ctx, name), QUERIES))
    assert [h["method"] for h in history(ctx.db, live(ctx, name))] == ["fast"]
    with pytest.raises(StorageError, match="read-only"):
        data_svc.add_utterance(ctx.db, live(ctx, name), "new text", "balance")


def test_a_tampered_bundle_imports_nothing(ctx, demo, tmp_path):
    out = tmp_path / "demo.zip"
    svc.export_bundle(ctx.live, demo, out)
    bad = tmp_path / "bad.zip"
    with zipfile.ZipFile(out) as src, zipfile.ZipFile(bad, "w") as dst:
        for item in src.infolist():
            data = src.read(item)
            if item.filename == "exemplars.jsonl":  # its sha256 in the manifest no longer matches
                data = data.replace(b"where is my order", b"WHERE is my order")
            dst.writestr(item, data)
    projects = project_names(ctx.db)
    with pytest.raises(ValueError, match=r"exemplars\.jsonl"):
        svc.import_bundle(ctx.factories, bad)
    assert project_names(ctx.db) == projects
    assert not list(ctx.settings.artifacts_dir.glob("imported/*"))


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
def test_interchange_formats_round_trip_through_a_project(ctx, demo, tmp_path, target):
    out = tmp_path / target
    n = io_svc.export_project(ctx.db, demo, out).rows
    labelled = sorted((r.text, r.labels) for r in io_svc.export_rows(ctx.db, demo) if r.labels)
    assert n > 0
    result = io_svc.import_file(ctx.db, destination(ctx.db, "copy"), out)
    assert result.inserted == len(labelled)
    copied = sorted((r.text, r.labels) for r in io_svc.export_rows(ctx.db, live(ctx, "copy")))
    assert copied == labelled


@pytest.fixture(scope="module")
def adapter_bundle(tmp_path_factory, encoder):
    from tests.core.bundle.test_weights import write_adapter_bundle

    return write_adapter_bundle(tmp_path_factory.mktemp("adapter"), encoder)


def test_a_sound_adapter_bundle_becomes_the_active_version(ctx, adapter_bundle):
    name = svc.import_bundle(ctx.factories, adapter_bundle)
    assert [h["method"] for h in history(ctx.db, live(ctx, name))] == ["lora"]
    assert (
        predict_svc.predict(ctx.live, live(ctx, name), ["I lost my card"])[0]["top"] == "lost_card"
    )


def test_a_bundle_whose_weights_cannot_load_imports_nothing(ctx, adapter_bundle, tmp_path):
    from tests.core.bundle.test_weights import ADAPTER, Q_A, edit_tensors, rewrite

    bad = rewrite(adapter_bundle, tmp_path / "bad.zip", edit_tensors(ADAPTER, lambda t: t.pop(Q_A)))
    projects = project_names(ctx.db)
    with pytest.raises(BundleError, match=r"lacks 1 tensor\(s\) of the base encoder 'minilm'"):
        svc.import_bundle(ctx.factories, bad)
    assert project_names(ctx.db) == projects
    assert not list(ctx.settings.artifacts_dir.glob("imported/*"))


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
