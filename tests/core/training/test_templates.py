"""TaDSE at training time: filled templates join the training data (seeded, capped), every
utterance with a template is paired with it, and the template-aware loss changes what is learnt."""

from __future__ import annotations

import numpy as np
import pytest

from core.training import TrainConfig, train_encoder
from core.training.fit import _fast_batches
from core.training.templates import template_training_data

TEXTS = ["fly to Rome", "a flight to Oslo please", "hi", "hello", "cancel my trip", "stop it"]
LABELS = [("book",), ("book",), ("greet",), ("greet",), ("cancel",), ("cancel",)]
TEMPLATES = {"book": ["fly to {city}", "book {city} {day}"], "cancel": ["cancel {day}"]}
BOOK = {"city": ["Rome", "Oslo", "Lima", "Paris"], "day": ["today", "tomorrow", "friday"]}


def test_filled_templates_follow_the_labelled_data_seeded_and_capped_per_intent():
    data = template_training_data(TEXTS, LABELS, TEMPLATES, BOOK, per_intent=4, seed=0)
    again = template_training_data(TEXTS, LABELS, TEMPLATES, BOOK, per_intent=4, seed=0)
    other = template_training_data(TEXTS, LABELS, TEMPLATES, BOOK, per_intent=4, seed=1)
    assert data == again and data.texts != other.texts
    assert data.texts[: len(TEXTS)] == TEXTS  # the labelled ones first, untouched
    extra = list(zip(data.texts[len(TEXTS) :], data.labels[len(TEXTS) :], strict=True))
    assert sum(1 for _, y in extra if y == ("book",)) == 4
    assert sum(1 for _, y in extra if y == ("cancel",)) == 3  # all "cancel {day}" can give
    assert not any(y == ("greet",) for _, y in extra)  # no templates, nothing added
    assert data.filled == 7 and len(set(data.texts)) == len(data.texts)
    assert "fly to Rome" not in data.texts[len(TEXTS) :]  # a labelled text is never made again


def test_each_utterance_is_paired_with_its_annotation_template_else_the_books():
    data = template_training_data(
        TEXTS,
        LABELS,
        TEMPLATES,
        BOOK,
        per_intent=1,
        seed=0,
        annotated={"a flight to Oslo please": "a flight to {city} please"},
    )
    assert data.templates["a flight to Oslo please"] == "a flight to {city} please"
    assert data.templates["fly to Rome"] == "fly to {city}"  # by the book
    assert "hi" not in data.templates  # no known value: no template
    for text in data.texts[len(TEXTS) :]:
        assert data.templates[text] in TEMPLATES["book"] + TEMPLATES["cancel"]


def test_fast_batches_pair_the_anchors_that_have_a_template_with_it():
    cfg = TrainConfig(batch_size=4)
    pairs = {"fly to Rome": "fly to {city}", "cancel my trip": "cancel my trip {day}"}
    batches = _fast_batches(TEXTS, LABELS, cfg, passes=2, templates=pairs)
    assert all(len(b.columns) == 4 for b in batches)
    for b in batches:
        anchors, _, utterances, templates = b.columns
        assert set(utterances) <= set(anchors) & set(pairs)
        assert templates == [pairs[u] for u in utterances]
    assert all(len(b.columns) == 2 for b in _fast_batches(TEXTS, LABELS, cfg, passes=1))


def test_the_template_loss_needs_an_in_batch_method_and_round_trips():
    with pytest.raises(ValueError, match=r"template_loss .* use method 'fast' or 'lora'"):
        TrainConfig(method="convfit", template_loss=0.5)
    with pytest.raises(ValueError, match="template_fill must be between 0 and 1000"):
        TrainConfig(template_fill=-1)
    cfg = TrainConfig(template_fill=20, template_loss=0.5)
    assert TrainConfig.from_dict(cfg.to_dict()) == cfg


@pytest.mark.slow
def test_the_template_loss_reaches_training_and_changes_the_model():
    data = template_training_data(TEXTS, LABELS, TEMPLATES, BOOK, per_intent=3, seed=0)
    plain = TrainConfig(epochs=1, batch_size=4, seed=0)
    aware = TrainConfig(epochs=1, batch_size=4, seed=0, template_loss=1.0)
    args = ("minilm", data.texts, data.labels)
    a = train_encoder(*args, plain, device="cpu", templates=data.templates)
    b = train_encoder(*args, aware, device="cpu", templates=data.templates)
    assert a.stats["steps"] == b.stats["steps"]
    assert a.stats["loss"] != b.stats["loss"]
    va, vb = a.encoder().encode(TEXTS[:2]), b.encoder().encode(TEXTS[:2])
    assert not np.allclose(va, vb, atol=1e-5)
