from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

import core.bundle.onnx as ox
from core.bundle import load, write_bundle
from core.bundle.quantise import EXPORT_ORDER

from .test_bundle import POOL, QUERIES

EVAL = [
    *QUERIES,
    "has my card been shipped",
    "card not delivered",
    "my purse was stolen",
    "conversion rate for pounds",
    "shut down my account",
    "I'd like to terminate my account",
]


@pytest.fixture(scope="module")
def exported(tmp_path_factory, encoder) -> ox.OnnxExport:
    return ox.export_onnx(
        encoder,
        tmp_path_factory.mktemp("onnx") / "onnx",
        pool_texts=[t for t, _ in POOL],
        pool_labels=[lab for _, lab in POOL],
        eval_texts=EVAL,
    )


@pytest.mark.slow
def test_export_is_small_and_agrees(exported, encoder):
    assert exported.size_mb <= 25
    assert exported.agreement >= 0.99
    names = {p.name for p in exported.folder.iterdir()}
    assert {"model.int8.onnx", "tokenizer.json", "onnx_config.json"} <= names
    onnx_enc = ox.OnnxEncoder(exported.folder, threads=1)
    v = onnx_enc.encode(EVAL)
    ref = encoder.encode(EVAL)
    assert v.dtype == np.float32 and v.shape == ref.shape
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert float((v * ref).sum(axis=1).min()) > 0.95
    # Dynamic int8 scales see the padding, so a batch differs a little from one-by-one.
    assert float(onnx_enc.encode([EVAL[0]])[0] @ v[0]) > 0.98


@pytest.mark.slow
def test_bundle_prefers_onnx(exported, encoder, tmp_path):
    texts = [t for t, _ in POOL]
    zpath = write_bundle(
        tmp_path / "o.zip",
        encoder_dir=None,
        base_encoder="minilm",
        exemplar_texts=texts,
        exemplar_labels=[lab for _, lab in POOL],
        vectors=encoder.encode(texts),
        manifest_fields={"project": "onnx"},
        extra_files={"onnx": exported.folder},
    )
    with load(zpath, prefer_onnx=True, onnx_threads=1) as fast:
        assert isinstance(fast.encoder, ox.OnnxEncoder)
        assert fast.manifest["onnx"]["parity_top1"] >= 0.99
        assert "The encoder is int8 ONNX (`onnx/`)" in (fast.root / "README.md").read_text()
        got = fast.predict(EVAL)
    with load(zpath, device="cpu") as exact:
        assert not isinstance(exact.encoder, ox.OnnxEncoder)
        want = exact.predict(EVAL)
    assert [g["top"] for g in got] == [w["top"] for w in want]


@pytest.mark.slow
def test_export_refuses_below_parity(exported, encoder, tmp_path, monkeypatch):
    def copy_export(_encoder, out_dir: Path, **_kw: object) -> dict:
        for f in exported.folder.iterdir():
            shutil.copy(f, out_dir / f.name)
        return {}

    monkeypatch.setattr(ox, "quantised_export", copy_export)
    out = tmp_path / "refused"
    with pytest.raises(ox.OnnxParityError, match=r"agreement with the fp32 model is 100\.00%"):
        ox.export_onnx(
            encoder,
            out,
            pool_texts=[t for t, _ in POOL],
            pool_labels=[lab for _, lab in POOL],
            eval_texts=EVAL,
            min_agreement=1.01,
        )
    assert not out.exists()


def test_parity_measures_disagreement(encoder):
    class Noise:
        def encode(self, texts):
            rng = np.random.default_rng(0)
            return rng.normal(size=(len(texts), 384)).astype(np.float32)

    agreement = ox.parity(
        encoder,
        Noise(),
        pool_texts=[t for t, _ in POOL],
        pool_labels=[lab for _, lab in POOL],
        eval_texts=EVAL,
    )
    assert agreement < 0.9
    err = ox.OnnxParityError(agreement, 0.99, len(EVAL))
    assert "refused" in str(err) and err.agreement == agreement


@pytest.mark.slow
def test_export_records_the_variant_that_passed_and_its_measured_parity(exported, encoder):
    config = json.loads((exported.folder / "onnx_config.json").read_text())
    assert config["variant"] == exported.variant == EXPORT_ORDER[0]
    assert config["tried"] == {exported.variant: exported.agreement}
    assert config["parity_pool"] == "fp32" and config["parity_n"] == len(EVAL)
    measured = ox.parity(
        encoder,
        ox.OnnxEncoder(exported.folder),
        pool_texts=[t for t, _ in POOL],
        pool_labels=[lab for _, lab in POOL],
        eval_texts=EVAL,
    )
    assert config["parity_top1"] == measured


@pytest.mark.slow
def test_the_chosen_variant_quantises_every_weight_matmul(exported):
    import onnx

    graph = onnx.load(str(exported.folder / "model.int8.onnx")).graph
    weights = {t.name for t in graph.initializer}
    ops = [n.op_type for n in graph.node]
    assert ops.count("MatMulNBits") == 36  # 6 layers x (q, k, v, attention out, 2 FFN)
    assert not [n.name for n in graph.node if n.op_type == "MatMul" and n.input[1] in weights]


def test_an_unknown_variant_is_refused(encoder, tmp_path):
    with pytest.raises(ValueError, match="Unknown int8 variant 'int3'"):
        ox.quantised_export(encoder, tmp_path, variant="int3")
