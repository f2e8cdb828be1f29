"""A version's int8 copy keeps only what differs from its base encoder's int8 graph (issue 71
item 4): MiniLM tuned on three of its six layers shares its embeddings and frozen layers with
the base's graph of the same recipe, answers exactly as its whole graph, and a bundle gets the
whole graph back."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from core.bundle.onnx import quantised_export
from core.bundle.onnx_encoder import MODEL_FILE, OnnxEncoder
from core.bundle.onnx_shared import SHARED_FILE, materialise, model_bytes, share, shared
from core.training import TrainConfig, train_encoder
from tests.samples import FIT_LABELS, FIT_TEXTS

pytestmark = pytest.mark.slow

QUESTIONS = ["my card has not arrived", "how do I top up", "hello there", "refund please"]


def test_a_tuned_copy_keeps_what_differs_from_the_base_graph_and_answers_as_its_whole(
    encoder, tmp_path: Path
) -> None:
    tuned = train_encoder("minilm", FIT_TEXTS, FIT_LABELS, TrainConfig(epochs=1), device="cpu")
    base, whole, mine = tmp_path / "base", tmp_path / "whole", tmp_path / "v" / "onnx"
    for folder in (base, whole, mine):
        folder.mkdir(parents=True)
    quantised_export(encoder, base)
    quantised_export(tuned.encoder(), whole)
    shutil.copytree(whole, mine, dirs_exist_ok=True)
    size = (mine / MODEL_FILE).stat().st_size
    saved = share(mine, base, store="base/minilm@x-int8-blockwise-32")
    record = shared(mine)
    assert record is not None and record["store"] == "base/minilm@x-int8-blockwise-32"
    assert saved > 0.6 * size  # the embeddings and three frozen layers: ~18 of 24 MB
    assert (mine / MODEL_FILE).stat().st_size < 0.4 * size
    expected = OnnxEncoder(whole, threads=1).encode(QUESTIONS)
    got = OnnxEncoder(mine, threads=1, model=model_bytes(mine)).encode(QUESTIONS)
    np.testing.assert_array_equal(got, expected)  # the same graph, byte for byte
    out = materialise(mine, tmp_path / "bundle-onnx")
    assert not (out / SHARED_FILE).exists()
    assert (out / MODEL_FILE).stat().st_size == pytest.approx(size, rel=0.01)
    np.testing.assert_array_equal(OnnxEncoder(out, threads=1).encode(QUESTIONS), expected)


def test_a_copy_whose_base_graph_changed_is_refused_by_name(encoder, tmp_path: Path) -> None:
    tuned = train_encoder("minilm", FIT_TEXTS, FIT_LABELS, TrainConfig(epochs=1), device="cpu")
    base, mine = tmp_path / "base", tmp_path / "v" / "onnx"
    base.mkdir()
    mine.mkdir(parents=True)
    quantised_export(encoder, base)
    quantised_export(tuned.encoder(), mine)
    assert share(mine, base) > 0
    (base / MODEL_FILE).write_bytes(b"not the graph it shared")
    with pytest.raises(ValueError, match="int8 copy it shares weights with is missing or changed"):
        model_bytes(mine)
