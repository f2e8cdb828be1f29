"""Versions trained with a separate (non-siamese) label encoder, an option that has left
``TrainConfig`` (it lost on both bench data sets, bench/RESULTS.md): their artifacts still load,
with the label encoder that embeds their anchors, and nothing new writes one."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from core.encoding.registry import LABEL_DIR
from core.training import TrainConfig, TrainedModel, load_label_encoder, load_trained
from tests.samples import cut_copy

ANCHORS = ["card lost or stolen", "account balance", "money transfer to someone", "greeting"]


def _old_artifact(folder: Path, model) -> Path:
    """An artifact as a version with a 2-layer label encoder was saved: ``label_encoder/`` beside
    ``encoder/``, and ``model.json`` recording the options that have since left."""
    TrainedModel(model=model, base_encoder="minilm", config=TrainConfig(max_length=64)).save(folder)
    assert not (folder / LABEL_DIR).exists()  # nothing new writes one
    cut_copy(model, 2).save(str(folder / LABEL_DIR), safe_serialization=True)
    meta = json.loads((folder / "model.json").read_text())
    meta["config"].update(label_encoder="separate", label_layers=2, anchor_pairs=True)
    (folder / "model.json").write_text(json.dumps(meta))
    return folder


def test_an_older_version_with_a_label_encoder_loads_and_embeds_its_anchors_with_it(
    tmp_path: Path, encoder
) -> None:
    folder = _old_artifact(tmp_path, encoder.model)
    meta = json.loads((folder / "model.json").read_text())
    with pytest.raises(ValueError, match="no longer an option"):
        TrainConfig.from_dict(meta["config"])  # it cannot be trained again, but it loads:
    utterances = load_trained(folder, device="cpu")
    labels = load_label_encoder(folder, device="cpu")
    assert labels is not None and labels.fingerprint.startswith("fast-label@")
    assert labels.fingerprint != utterances.fingerprint  # its own embedding cache
    assert labels.model.max_seq_length == utterances.model.max_seq_length == 64
    np.testing.assert_allclose(
        labels.encode(ANCHORS), cut_copy(encoder.model, 2).encode(ANCHORS), atol=1e-5
    )
    assert np.abs(labels.encode(ANCHORS) - utterances.encode(ANCHORS)).max() > 0.01

    shutil.rmtree(folder / LABEL_DIR)
    with pytest.raises(ValueError, match="label_encoder/ is missing"):
        load_label_encoder(folder, device="cpu")
    meta["config"]["label_encoder"] = "shared"
    (folder / "model.json").write_text(json.dumps(meta))
    assert load_label_encoder(folder, device="cpu") is None  # siamese: the anchors share it
