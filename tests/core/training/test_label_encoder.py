"""The separate (non-siamese) label encoder: trained beside the utterance encoder, saved with
the version, read back for the anchors."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from core.bundle.layout import LABEL_DIR
from core.training import TrainConfig, load_label_encoder, train_encoder
from core.training.label_encoder import label_column, make_label_model

# 4 intents x 3 examples; each utterance avoids its own intent's name, as borderline ones do
DATA = {
    "card_lost": ["someone stole my wallet", "my card is missing", "can't find my bank card"],
    "balance": ["how much money do I have", "what's left in my account", "funds left?"],
    "transfer": ["send 50 to John", "wire cash to my friend", "pay my sister"],
    "greeting": ["hello there", "hi", "good morning"],
}
ANCHORS = {
    "card_lost": "card lost or stolen",
    "balance": "account balance",
    "transfer": "money transfer to someone",
    "greeting": "greeting",
}
TEXTS = [t for ts in DATA.values() for t in ts]
LABELS = [(k,) for k, ts in DATA.items() for _ in ts]
SEPARATE = TrainConfig(
    epochs=1, batch_size=4, lr=1e-4, seed=0, anchor_pairs=True, label_encoder="separate"
)


def test_the_label_column_holds_each_utterances_own_anchor() -> None:
    labels = [("greeting",), ("card_lost", "balance"), ("out_of_scope",), ("unknown",)]
    assert label_column(labels, ANCHORS) == ["greeting", "card lost or stolen", "", ""]


def test_a_heterogeneous_label_encoder_keeps_the_lowest_layers(encoder) -> None:
    layers = len(encoder.model[0].model.encoder.layer)
    small = make_label_model(encoder.model, 2)
    assert len(small[0].model.encoder.layer) == 2 < layers
    assert len(encoder.model[0].model.encoder.layer) == layers  # a copy: the base is untouched
    assert small.encode(["hi"]).shape == encoder.model.encode(["hi"]).shape


@pytest.mark.slow
def test_a_separate_label_encoder_trains_saves_and_loads(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="needs the intents' descriptions or names"):
        train_encoder("minilm", TEXTS, LABELS, SEPARATE, device="cpu")
    trained = train_encoder("minilm", TEXTS, LABELS, SEPARATE, device="cpu", anchors=ANCHORS)
    utterances, labels_enc = trained.encoder(), trained.label_encoder()
    assert labels_enc is not None and labels_enc.fingerprint != utterances.fingerprint
    names = list(ANCHORS)
    anchors = labels_enc.encode([ANCHORS[n] for n in names])
    # the same text lands elsewhere in the label encoder: its weights were trained apart
    same_text = utterances.encode([ANCHORS[n] for n in names])
    assert np.abs(anchors - same_text).max() > 0.01
    # and each training utterance still ranks its own intent's anchor first
    ranked = utterances.encode(TEXTS) @ anchors.T
    own = [names.index(lab[0]) for lab in LABELS]
    assert [int(np.argmax(row)) for row in ranked] == own

    trained.save(tmp_path)
    assert (tmp_path / LABEL_DIR / "model.safetensors").is_file()
    loaded = load_label_encoder(tmp_path, device="cpu")
    assert loaded is not None
    assert loaded.fingerprint.startswith("fast-label@")  # not the utterance encoder's cache
    np.testing.assert_allclose(loaded.encode([ANCHORS[n] for n in names]), anchors, atol=1e-5)

    shutil.rmtree(tmp_path / LABEL_DIR)
    with pytest.raises(ValueError, match="label_encoder/ is missing"):
        load_label_encoder(tmp_path, device="cpu")
    meta = json.loads((tmp_path / "model.json").read_text())
    meta["config"] = dataclasses.replace(SEPARATE, label_encoder="shared").to_dict()
    (tmp_path / "model.json").write_text(json.dumps(meta))
    assert load_label_encoder(tmp_path, device="cpu") is None  # siamese: the anchors share it
