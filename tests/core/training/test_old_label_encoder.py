"""Versions trained with a separate (non-siamese) label encoder, an option that has left
``TrainConfig`` (it lost on both bench data sets, bench/RESULTS.md): their artifacts still load,
with the label encoder that embeds their anchors (the encoder's ``anchors``, the one place that
knows it), and nothing new writes one."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from core.encoding import anchor_encoder_of
from core.encoding.registry import LABEL_DIR
from core.retrieval.factory import Anchors, PredictorFactory
from core.retrieval.predictor import Predictor
from core.training import TrainConfig, TrainedModel, load_trained
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
    labels = anchor_encoder_of(utterances)  # what every anchor embedding asks
    assert labels is utterances.anchors and labels is not utterances
    assert labels.fingerprint.startswith(f"{meta['method']}-label@")
    assert labels.fingerprint != utterances.fingerprint  # its own embedding cache
    assert labels.model.max_seq_length == utterances.model.max_seq_length == 64
    np.testing.assert_allclose(
        labels.encode(ANCHORS), cut_copy(encoder.model, 2).encode(ANCHORS), atol=1e-5
    )
    assert np.abs(labels.encode(ANCHORS) - utterances.encode(ANCHORS)).max() > 0.01

    shutil.rmtree(folder / LABEL_DIR)
    with pytest.raises(ValueError, match="label_encoder/ is missing"):
        load_trained(folder, device="cpu")  # its anchors would land in the wrong space
    meta["config"]["label_encoder"] = "shared"
    (folder / "model.json").write_text(json.dumps(meta))
    siamese = load_trained(folder, device="cpu")
    assert siamese.anchors is None and anchor_encoder_of(siamese) is siamese  # they share it


def test_the_predictors_of_an_older_version_embed_its_anchors_with_its_label_encoder(
    tmp_path: Path, encoder
) -> None:
    """Neither the factory, nor a Predictor's own anchors, nor a fold-wise pool of it puts the
    anchors where the utterance encoder would: each asks the encoder the reader loaded."""
    utterances = load_trained(_old_artifact(tmp_path, encoder.model), device="cpu")
    names = ["lost_card", "balance", "transfer", "greet"]
    texts = dict(zip(names, ANCHORS, strict=True))
    by_labels = cut_copy(encoder.model, 2).encode(ANCHORS)
    by_utterances = utterances.encode(ANCHORS)
    factory = PredictorFactory(utterances, anchors=Anchors(texts, 1.0))
    prepared = factory.prepared().anchors
    assert prepared is not None and prepared.vectors is not None
    np.testing.assert_allclose(prepared.vectors, by_labels, atol=1e-5)
    predictor = factory.build(["hello there", "what is my balance"], ["greet", "balance"])
    fold = predictor.fold([0])
    fold.set_anchors(texts, 1.0)  # embedded again, by the fold's own encoder
    alone = Predictor(utterances)
    alone.set_anchors(texts, 1.0)
    query = utterances.encode(["I lost my card"])[0]
    for pool in (predictor, fold, alone):
        scores = {s.intent: s.anchor for s in pool.rank(query[None], show=10)[0].intents}
        lost = scores["lost_card"]
        assert lost is not None and lost == pytest.approx(float(by_labels[0] @ query), abs=1e-4)
        assert abs(lost - float(by_utterances[0] @ query)) > 1e-3
