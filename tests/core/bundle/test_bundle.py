from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from core.bundle import (
    BundleError,
    load,
    model_card,
    open_bundle,
    write_bundle,
)
from core.retrieval.knn import KnnIndex
from core.retrieval.predictor import prediction_to_dict

ROOT = Path(__file__).resolve().parents[3]

POOL = [
    ("where is my new card", ("card_arrival",)),
    ("my card still has not arrived", ("card_arrival",)),
    ("how long does card delivery take", ("card_arrival",)),
    ("I lost my card", ("lost_card",)),
    ("someone stole my wallet with the card", ("lost_card",)),
    ("my card is missing", ("lost_card",)),
    ("what is the exchange rate", ("exchange_rate",)),
    ("how much is a euro in dollars", ("exchange_rate",)),
    ("which rate do you use to convert money", ("exchange_rate",)),
    ("I want to close my account", ("close_account",)),
    ("delete my account please", ("close_account",)),
    ("how do I cancel my account", ("close_account",)),
]
QUERIES = ["the card has not come yet", "I can't find my card", "dollar to euro rate", "cancel it"]


@pytest.fixture(scope="module")
def pool_vectors(encoder) -> np.ndarray:
    return encoder.encode([t for t, _ in POOL])


def _write(path: Path, vectors: np.ndarray, **kwargs) -> Path:
    fields = {
        "project": "banking demo",
        "model_version": 3,
        "metrics": {"accuracy": 0.9},
        "base_metrics": {"accuracy": 0.8},
        "dataset_hash": "abc123",
        "thresholds": {},
    }
    fields.update(kwargs.pop("manifest_fields", {}))
    return write_bundle(
        path,
        encoder_dir=kwargs.pop("encoder_dir", None),
        base_encoder="minilm",
        exemplar_texts=[t for t, _ in POOL],
        exemplar_labels=[lab for _, lab in POOL],
        vectors=vectors,
        manifest_fields=fields,
        **kwargs,
    )


@pytest.fixture(scope="module")
def base_bundle(tmp_path_factory, pool_vectors) -> Path:
    return _write(tmp_path_factory.mktemp("b") / "base.zip", pool_vectors)


def _in_process(encoder, vectors: np.ndarray, k: int = 1) -> list[dict]:
    index = KnnIndex(vectors.shape[1])
    index.add(list(range(len(POOL))), vectors, [t for t, _ in POOL], [lab for _, lab in POOL])
    preds = index.classify(encoder.encode(QUERIES), k=k)
    return [prediction_to_dict(q, p) for q, p in zip(QUERIES, preds, strict=True)]


def test_base_bundle_predicts_like_the_app(base_bundle, encoder, pool_vectors):
    with load(base_bundle, device="cpu") as predictor:
        got = predictor.predict(QUERIES)
    want = _in_process(encoder, pool_vectors)
    assert [g["top"] for g in got] == [
        "card_arrival",
        "lost_card",
        "exchange_rate",
        "close_account",
    ]
    assert [g["top"] for g in got] == [w["top"] for w in want]
    for g, w in zip(got, want, strict=True):
        assert g["score"] == pytest.approx(w["score"], abs=1e-5)
        assert [n["text"] for n in g["neighbours"]] == [n["text"] for n in w["neighbours"]]
    first = got[0]
    keys = {"text", "top", "score", "margin", "labels", "intents", "neighbours", "oos", "ambiguous"}
    assert set(first) - {"threshold"} == keys  # a threshold only when one decided
    assert [g["oos"] for g in got] == [w["oos"] for w in want]
    assert first["labels"] == ["card_arrival"]
    assert first["intents"][0]["best"]["labels"] == ["card_arrival"]
    assert 0 < first["margin"] <= 1


def test_predict_accepts_a_string_and_k(base_bundle):
    with load(base_bundle, device="cpu") as predictor:
        one = predictor.predict("I lost my card", k=3)
        assert predictor.predict([]) == []
    assert len(one) == 1 and one[0]["top"] == "lost_card"
    best = one[0]["intents"][0]
    assert best["best"]["text"] == "I lost my card"
    assert best["score"] < 1.0  # the mean of its 3 nearest, not just the exact match


def test_manifest_card_and_label_map(base_bundle):
    contents = open_bundle(base_bundle)
    try:
        m = contents.manifest
        assert m["bundle_format"] == 1 and m["encoder_kind"] == "base"
        assert m["project"] == "banking demo" and m["model_version"] == 3
        assert m["intents"] == {
            "card_arrival": 3,
            "close_account": 3,
            "exchange_rate": 3,
            "lost_card": 3,
        }
        assert m["multi_label"] is False and m["created_at"]
        assert set(m["files"]) == {"README.md", "exemplars.jsonl", "labels.json", "vectors.npy"}
        card = (contents.root / "README.md").read_text()
        assert "| accuracy | 0.9000 | 0.8000 |" in card
        assert "| lost_card | 3 |" in card and "from core.bundle import load" in card
        labels = json.loads((contents.root / "labels.json").read_text())
        assert labels["labels"] == sorted(m["intents"])
        assert contents.texts[0] == POOL[0][0] and contents.labels[3] == ("lost_card",)
        root = contents.root
    finally:
        contents.cleanup()
    assert not root.exists()


def test_full_encoder_bundle(tmp_path, encoder, pool_vectors):
    st_dir = tmp_path / "st"
    encoder.model.save(str(st_dir), safe_serialization=True)
    zpath = _write(tmp_path / "full.zip", pool_vectors, encoder_dir=st_dir)
    names = zipfile.ZipFile(zpath).namelist()
    assert "encoder/model.safetensors" in names and "encoder/modules.json" in names
    with load(zpath, device="cpu") as predictor:
        assert predictor.manifest["encoder_kind"] == "full"
        got = predictor.predict(QUERIES)
    want = _in_process(encoder, pool_vectors)
    assert [g["top"] for g in got] == [w["top"] for w in want]
    for g, w in zip(got, want, strict=True):
        assert g["score"] == pytest.approx(w["score"], abs=1e-4)


def test_model_version_folder_goes_through_load_trained(tmp_path, encoder, pool_vectors):
    training = pytest.importorskip("core.training")
    version = tmp_path / "v1"
    encoder.model.save(str(version / "encoder"), safe_serialization=True)
    meta = {
        "format": 1,
        "kind": "full",
        "method": "fast",
        "base_encoder": "minilm",
        "config": training.TrainConfig().to_dict(),
    }
    (version / "model.json").write_text(json.dumps(meta))
    zpath = _write(tmp_path / "v1.zip", pool_vectors, encoder_dir=version)
    assert "model.json" in zipfile.ZipFile(zpath).namelist()
    with load(zpath, device="cpu") as predictor:
        assert "fast" in predictor.encoder.name
        assert [p["top"] for p in predictor.predict(QUERIES)] == [
            w["top"] for w in _in_process(encoder, pool_vectors)
        ]


def test_extra_files_are_carried_and_hashed(tmp_path, pool_vectors):
    head = tmp_path / "head"
    head.mkdir()
    (head / "head.json").write_text('{"hidden": 8}')
    zpath = _write(tmp_path / "h.zip", pool_vectors, extra_files={"head": head})
    contents = open_bundle(zpath)
    assert "head/head.json" in contents.manifest["files"]
    assert (contents.root / "head" / "head.json").read_text() == '{"hidden": 8}'
    contents.cleanup()


def test_write_refuses_bad_input(tmp_path, pool_vectors):
    with pytest.raises(ValueError, match="equal n"):
        _write(tmp_path / "x.zip", pool_vectors[:3])
    with pytest.raises(ValueError, match="may not set"):
        _write(tmp_path / "x.zip", pool_vectors, manifest_fields={"files": {}})
    pickled = tmp_path / "pk"
    pickled.mkdir()
    (pickled / "config.json").write_text("{}")
    (pickled / "pytorch_model.bin").write_bytes(b"\x80\x04")
    with pytest.raises(BundleError, match="pickled"):
        _write(tmp_path / "x.zip", pool_vectors, encoder_dir=pickled)
    assert not (tmp_path / "x.zip").exists()
    assert not list(tmp_path.glob(".x.zip.*"))


def test_multi_label_thresholds():
    from core.retrieval.knn import IntentScore, Neighbour, Prediction

    n = Neighbour(0, "hi and bye", ("bye", "greet"), 0.8)
    pred = Prediction([IntentScore("greet", 0.8, n), IntentScore("bye", 0.6, n)], [n])
    multi = prediction_to_dict("x", pred, multi_label=True, thresholds={"default": 0.7})
    assert multi["labels"] == ["greet"]
    both = prediction_to_dict("x", pred, multi_label=True, thresholds={"default": 0.7, "bye": 0.5})
    assert both["labels"] == ["greet", "bye"]
    unsure = prediction_to_dict("x", pred, thresholds={"default": 0.9})
    assert unsure["labels"] == [] and unsure["top"] == "greet"


def test_model_card_without_metrics():
    card = model_card({"project": "p", "intents": {"a": 2}, "encoder_kind": "base"})
    assert card.startswith("# Intent model: p") and "## Metrics" not in card


@pytest.mark.slow
def test_runs_without_app_dependencies(base_bundle, encoder, pool_vectors):
    script = (
        "import sys, json\n"
        "for m in ('gradio', 'sqlalchemy', 'alembic', 'storage', 'app'):\n"
        "    sys.modules[m] = None\n"
        "from core.bundle import load\n"
        f"p = load({str(base_bundle)!r}, device='cpu')\n"
        f"print(json.dumps(p.predict({QUERIES!r})))\n"
        "assert 'gradio' not in [k for k, v in sys.modules.items() if v is not None]\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PATH": "/usr/bin:/bin"},
    )
    assert out.returncode == 0, out.stderr[-2000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    want = _in_process(encoder, pool_vectors)
    assert [g["top"] for g in got] == [w["top"] for w in want]
    for g, w in zip(got, want, strict=True):
        assert g["score"] == pytest.approx(w["score"], abs=1e-5)


def test_multi_label_head_decides_labels(tmp_path, pool_vectors):
    from core.multilabel.head import HeadConfig, MultiLabelHead

    head = MultiLabelHead(HeadConfig(epochs=5)).fit(pool_vectors, [lab for _, lab in POOL])
    head.save(tmp_path / "head")
    zpath = _write(tmp_path / "ml.zip", pool_vectors, extra_files={"head": tmp_path / "head"})
    with load(zpath, device="cpu") as predictor:
        assert predictor.head is not None
        got = predictor.predict(QUERIES[:2])
    want = head.predict(predictor.encoder.encode(QUERIES[:2]))
    assert [tuple(g["labels"]) for g in got] == want
    assert set(got[0]["probabilities"]) == {lab for _, (lab,) in POOL}
