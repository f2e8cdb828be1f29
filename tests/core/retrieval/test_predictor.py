"""The one predictor: the same answers from examples and from a bundle, the head decides a
multi-label set while the k-NN evidence stays, and a new example counts at once."""

from __future__ import annotations

import pytest

from core.bundle import load, write_bundle
from core.multilabel.head import HEAD_DIR, HeadConfig, MultiLabelHead
from core.retrieval.predictor import Predictor

POOL = [
    ("cancel my booking", ("cancel",)),
    ("I want to cancel the reservation", ("cancel",)),
    ("refund my deposit", ("refund",)),
    ("give me my money back", ("refund",)),
    ("cancel the booking and refund the deposit", ("cancel", "refund")),
    ("cancel it and give me a refund", ("cancel", "refund")),
    ("hello there", ()),
    ("thanks, bye", ()),
]
QUERIES = ["please cancel my room", "where is my money", "cancel my room and refund the deposit"]


def test_a_bundle_predicts_exactly_like_the_predictor_it_was_written_from(encoder, tmp_path):
    texts = [t for t, lab in POOL if lab]
    labels = [lab for _, lab in POOL if lab]
    vectors = encoder.encode(texts)
    live = Predictor.from_examples(encoder, texts, labels, vectors=vectors, multi_label=False)
    path = write_bundle(
        tmp_path / "b.zip",
        encoder_dir=None,
        base_encoder="minilm",
        exemplar_texts=texts,
        exemplar_labels=labels,
        vectors=vectors,
        manifest_fields={"project": "hotel", "multi_label": False},
    )
    with load(path) as bundled:
        assert bundled.predict(QUERIES, show=3) == live.predict(QUERIES, show=3)


def test_the_head_decides_the_label_set_and_the_neighbours_explain_it(encoder):
    texts = [t for t, _ in POOL]
    labels = [lab for _, lab in POOL]
    vectors = encoder.encode(texts)
    head = MultiLabelHead(HeadConfig(epochs=150, hidden=64)).fit(vectors, labels)
    predictor = Predictor.from_examples(encoder, texts, labels, vectors=vectors, head=head)
    assert predictor.multi_label  # 2 of 6 labelled rows carry two intents
    both, hello = predictor.predict(["cancel my room and refund the deposit", "hello there"])
    assert both["labels"] == ["cancel", "refund"]
    assert set(both["probabilities"]) == {"cancel", "refund"} and both["threshold"] == 0.3
    threshold = both["threshold"]
    assert [i for i, p in both["probabilities"].items() if p >= threshold] == both["labels"]
    assert both["neighbours"] and both["intents"][0]["intent"] in {"cancel", "refund"}
    assert hello["labels"] == []  # "no intent" rows taught the head to say nothing


def test_a_new_example_changes_the_next_prediction_without_retraining(encoder):
    predictor = Predictor.from_examples(
        encoder, ["cancel my booking", "refund my deposit"], [("cancel",), ("refund",)]
    )
    query = "what's the weather tomorrow"
    assert predictor.predict(query)[0]["top"] in {"cancel", "refund"}
    predictor.index.add(
        [99], encoder.encode(["will it rain tomorrow"]), ["will it rain"], [("weather",)]
    )
    assert predictor.predict(query)[0]["top"] == "weather"
    predictor.index.remove([99])
    assert predictor.predict(query)[0]["top"] != "weather"


def test_a_bundle_with_a_head_loads_it(encoder, tmp_path):
    texts = [t for t, _ in POOL]
    labels = [lab for _, lab in POOL]
    vectors = encoder.encode(texts)
    head = MultiLabelHead(HeadConfig(epochs=150, hidden=64)).fit(vectors, labels)
    head.save(tmp_path / HEAD_DIR)
    live = Predictor.from_examples(encoder, texts, labels, vectors=vectors, head=head)
    keep = [i for i, lab in enumerate(labels) if lab]
    path = write_bundle(
        tmp_path / "b.zip",
        encoder_dir=None,
        base_encoder="minilm",
        exemplar_texts=[texts[i] for i in keep],
        exemplar_labels=[labels[i] for i in keep],
        vectors=vectors[keep],
        manifest_fields={"multi_label": True},
        extra_files={HEAD_DIR: tmp_path / HEAD_DIR},
    )
    with load(path) as bundled:
        a = bundled.predict(QUERIES)
    b = live.predict(QUERIES)
    assert [r["labels"] for r in a] == [r["labels"] for r in b]
    assert [r["probabilities"] for r in a] == [r["probabilities"] for r in b]


def test_predictions_carry_both_parts_of_each_intents_score(encoder):
    texts = [t for t, lab in POOL if lab]
    labels = [lab for _, lab in POOL if lab]
    row = Predictor.from_examples(encoder, texts, labels, multi_label=False).predict(QUERIES[0])[0]
    top = row["intents"][0]
    assert top["score"] == pytest.approx((top["nearest"] + top["prototype"]) / 2)
    assert top["nearest"] == pytest.approx(top["best"]["similarity"])
    assert row["score"] == top["score"]


def test_a_bundle_records_its_rule_and_an_older_one_keeps_predicting_by_the_nearest_example(
    encoder, tmp_path
):
    texts = [t for t, lab in POOL if lab]
    labels = [lab for _, lab in POOL if lab]
    vectors = encoder.encode(texts)
    kwargs = dict(
        encoder_dir=None,
        base_encoder="minilm",
        exemplar_texts=texts,
        exemplar_labels=labels,
        vectors=vectors,
    )
    new = write_bundle(
        tmp_path / "new.zip", manifest_fields={"project": "h", "multi_label": False}, **kwargs
    )
    old = write_bundle(
        tmp_path / "old.zip",
        manifest_fields={"project": "h", "multi_label": False, "rule": None},
        **kwargs,
    )
    nearest = Predictor.from_examples(
        encoder, texts, labels, vectors=vectors, multi_label=False, rule="nearest"
    )
    with load(new) as b:
        assert b.manifest["rule"] == "nearest+prototype" and b.rule == "nearest+prototype"
    with load(old) as b:
        assert b.rule == "nearest" and b.predict(QUERIES) == nearest.predict(QUERIES)
