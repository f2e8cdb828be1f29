"""Intent names and descriptions as anchors: weighted into the prototypes, the only evidence of
an intent without examples (cold start), said in the explanation, carried by bundles."""

from __future__ import annotations

import numpy as np
import pytest

from core.bundle import load, write_bundle
from core.retrieval.anchors import ANCHOR_ID, anchor_texts
from core.retrieval.explain import explain
from core.retrieval.knn import KnnIndex
from core.retrieval.predictor import Predictor

POOL = [
    ("hello there", ("greet",)),
    ("hi, good morning", ("greet",)),
    ("bye for now", ("goodbye",)),
    ("see you later", ("goodbye",)),
    ("I want my money back for this order", ("refund",)),
]
DESCRIPTIONS = {"card_arrival": "My new bank card has not arrived in the post yet"}


def _toy_index(weight: float) -> KnnIndex:
    idx = KnnIndex(dim=2)
    idx.add(
        [1, 2], np.array([[1.0, 0.0], [0.8, 0.6]], dtype=np.float32), ["a", "b"], [("x",), ("x",)]
    )
    idx.set_anchors(["x", "y"], np.array([[0.0, 1.0], [0.6, 0.8]]), ["ex", "why"], weight)
    return idx


def test_an_anchor_counts_in_its_intents_prototype_as_weight_examples():
    q = np.array([[0.0, 1.0]], dtype=np.float32)
    off, on = _toy_index(0.0), _toy_index(2.0)
    assert off.classify(q)[0].top == "x" and len(off.classify(q)[0].intents) == 1
    x_off = off.classify(q)[0].intents[0]
    x_on = next(s for s in on.classify(q)[0].intents if s.intent == "x")
    # prototype of x: unit mean of (1,0), (0.8,0.6) and twice the anchor (0,1)
    proto = np.array([1.8, 0.6 + 2.0])
    assert x_on.prototype == pytest.approx(float(proto[1] / np.linalg.norm(proto)), abs=1e-6)
    assert x_on.prototype > x_off.prototype and x_on.anchor == pytest.approx(1.0)
    assert x_on.nearest == x_off.nearest  # the nearest-example part is untouched


def test_an_intent_without_examples_is_ranked_by_its_anchor_alone_until_it_gets_one():
    idx = _toy_index(1.0)
    q = np.array([[0.6, 0.8]], dtype=np.float32)
    y = next(s for s in idx.classify(q)[0].intents if s.intent == "y")
    assert y.cold and y.best.id == ANCHOR_ID and y.best.text == "why"
    assert y.score == pytest.approx(1.0) and y.size == 0
    # a new label counts at once: y now has an example and its anchor joins its prototype
    idx.add([3], np.array([[0.6, 0.8]], dtype=np.float32), ["c"], [("y",)])
    y = next(s for s in idx.classify(q)[0].intents if s.intent == "y")
    assert not y.cold and y.size == 1 and y.best.id == 3


def test_anchors_off_leave_every_prediction_as_it_was(encoder):
    texts, labels = [t for t, _ in POOL], [lab for _, lab in POOL]
    predictor = Predictor.from_examples(encoder, texts, labels)
    queries = encoder.encode(["hey how are you", "cheerio", "refund please"])
    plain = predictor.index.classify(queries)
    predictor.set_anchors(anchor_texts(["greet", "goodbye", "refund"]), 0.0)
    assert predictor.index.classify(queries) == plain
    assert predictor.index.anchors() == {}


def test_a_described_intent_with_no_examples_predicts_a_matching_question_zero_shot(encoder):
    texts, labels = [t for t, _ in POOL], [lab for _, lab in POOL]
    predictor = Predictor.from_examples(encoder, texts, labels, thresholds={"default": 0.99})
    names = ["greet", "goodbye", "refund", "card_arrival"]
    predictor.set_anchors(anchor_texts(names, DESCRIPTIONS), 1.0)
    [(row, pred)] = predictor.predict_with_evidence("my new card still hasn't come in the mail")
    assert row["top"] == "card_arrival" and row["labels"] == ["card_arrival"]
    assert not row["oos"]  # an anchor's score has no calibrated threshold to miss
    top = row["intents"][0]
    assert top["best"]["id"] == ANCHOR_ID and top["anchor"] == top["score"]
    said = explain(row["text"], pred, intent_descriptions=DESCRIPTIONS)
    assert said.predicted_by_anchor
    assert said.sentence.startswith(
        "Predicted *card_arrival*: no labelled examples yet: its description "
        f"'{DESCRIPTIONS['card_arrival']}' ({top['score']:.2f})."
    )
    # a question for an intent with examples still goes there, its anchor in the centre
    [(row, pred)] = predictor.predict_with_evidence("good morning to you")
    assert row["top"] == "greet" and "and its name" in explain(row["text"], pred).sentence


def test_a_bundle_carries_the_anchors_and_predicts_the_same(encoder, tmp_path):
    texts, labels = [t for t, _ in POOL], [lab for _, lab in POOL]
    vectors = encoder.encode(texts)
    anchors = anchor_texts(["greet", "goodbye", "refund", "card_arrival"], DESCRIPTIONS)
    anchor_vectors = encoder.encode(list(anchors.values()))
    live = Predictor.from_examples(encoder, texts, labels, vectors=vectors, multi_label=False)
    live.set_anchors(anchors, 1.5, vectors=anchor_vectors)
    path = write_bundle(
        tmp_path / "b.zip",
        encoder_dir=None,
        base_encoder="minilm",
        exemplar_texts=texts,
        exemplar_labels=labels,
        vectors=vectors,
        manifest_fields={"project": "bank", "multi_label": False},
        anchors=anchors,
        anchor_vectors=anchor_vectors,
        anchor_weight=1.5,
    )
    queries = ["where is my new card", "hello!", "money back please"]
    with load(path) as bundled:
        assert bundled.manifest["anchors"]["weight"] == 1.5
        assert bundled.predict(queries) == live.predict(queries)
        assert bundled.predict(queries)[0]["top"] == "card_arrival"
