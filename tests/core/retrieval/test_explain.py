from __future__ import annotations

import json

import numpy as np
import pytest

from core.retrieval.explain import borderline, explain, tokens
from core.retrieval.knn import IntentScore, KnnIndex, Neighbour, Prediction

POOL = [
    ("Where is my new card?", "card_arrival"),
    ("My card still has not arrived", "card_arrival"),
    ("How long does card delivery take?", "card_delivery_estimate"),
    ("When will you deliver the card?", "card_delivery_estimate"),
    ("My top-up failed", "top_up_failed"),
    ("The top up did not go through", "top_up_failed"),
]


@pytest.fixture(scope="module")
def index(encoder) -> KnnIndex:
    idx = KnnIndex(encoder.dim)
    texts = [t for t, _ in POOL]
    idx.add(list(range(len(POOL))), encoder.encode(texts), texts, [(lab,) for _, lab in POOL])
    return idx


def test_explanation_shows_both_sides_of_the_decision(encoder, index: KnnIndex) -> None:
    text = "my card hasn't come yet"
    pred = index.classify(encoder.encode([text]), k=1, show=3)[0]
    ex = explain(text, pred)
    assert ex.predicted == pred.top
    assert ex.runner_up is not None and ex.runner_up != ex.predicted
    assert ex.runner_up_neighbour is not None
    assert ex.runner_up in ex.runner_up_neighbour.labels
    assert ex.predicted_neighbour is not None and ex.predicted in ex.predicted_neighbour.labels
    assert ex.margin == pytest.approx(ex.score - ex.runner_up_score)
    assert ex.margin == pytest.approx(pred.intents[0].score - pred.intents[1].score)
    assert len(ex.neighbours) == 3
    assert ex.neighbours[0].similarity >= ex.neighbours[-1].similarity
    assert ex.sentence.startswith(f"Predicted *{ex.predicted}* because its examples are the")
    assert f"The closest other intent is *{ex.runner_up}*" in ex.sentence
    assert f"({ex.predicted_neighbour.similarity:.2f})" in ex.sentence
    json.dumps(ex.to_dict())  # JSON-ready
    # when a multi-label head decided the label set, the k-NN top is the nearest, not the decision
    decided = explain(text, pred, head_decided=True).sentence
    assert decided == ex.sentence.replace("Predicted *", "Nearest intent *", 1)


def test_explanation_names_both_parts_of_the_score_that_decided(encoder, index) -> None:
    text = "my card hasn't come yet"
    top = index.classify(encoder.encode([text]), k=1, show=3)[0].intents[0]
    ex = explain(text, index.classify(encoder.encode([text]), k=1, show=3)[0])
    assert ex.predicted_prototype == pytest.approx(top.prototype)
    assert ex.predicted_nearest == pytest.approx(ex.predicted_neighbour.similarity)
    assert ex.score == pytest.approx((ex.predicted_nearest + ex.predicted_prototype) / 2)
    assert f"the centre of its 2 examples ({ex.predicted_prototype:.2f})" in ex.sentence
    assert f"give it {ex.score:.2f}" in ex.sentence
    # the supporting examples are the predicted intent's own, nearest first
    assert [n.labels for n in ex.predicted_examples] == [(ex.predicted,)] * 2
    assert ex.predicted_examples[0] == ex.predicted_neighbour
    assert ex.to_dict()["predicted_examples"][0]["text"] == ex.predicted_neighbour.text


def test_nearest_rule_is_explained_by_the_nearest_example_alone(encoder, index) -> None:
    text = "my card hasn't come yet"
    pred = index.classify(encoder.encode([text]), k=1, show=3, rule="nearest")[0]
    ex = explain(text, pred)
    assert ex.sentence.startswith(f"Predicted *{ex.predicted}* because it is most like '")
    assert "centre" not in ex.sentence and ex.predicted_prototype is None
    assert ex.score == pytest.approx(ex.predicted_neighbour.similarity)


def _neighbour(i: int, text: str, intent: str, sim: float) -> Neighbour:
    return Neighbour(i, text, (intent,), sim)


def _pred(*scores: tuple[str, float, str]) -> Prediction:
    items = [
        IntentScore(name, s, _neighbour(i, text, name, s))
        for i, (name, s, text) in enumerate(scores)
    ]
    return Prediction(items, [it.best for it in items])


def test_ambiguous_when_margin_small() -> None:
    p = _pred(("a_x", 0.80, "one"), ("b_y", 0.78, "two"))
    ex = explain("hello", p)
    assert ex.ambiguous and ex.margin == pytest.approx(0.02)
    assert "close call" in ex.sentence
    assert not explain("hello", p, ambiguous_margin=0.01).ambiguous


def test_empty_pool_and_single_intent() -> None:
    empty = explain("anything", Prediction([]))
    assert empty.predicted is None and empty.runner_up is None
    assert empty.sentence.startswith("No prediction")
    assert not empty.ambiguous and not empty.borderline
    assert empty.to_dict()["neighbours"] == []

    single = explain("hi there", _pred(("greeting", 0.9, "hello")))
    assert single.predicted == "greeting" and single.runner_up is None
    assert single.margin == 1.0 and not single.ambiguous
    assert "No other intent" in single.sentence


def test_borderline_on_hand_made_names() -> None:
    is_b, reason = borderline("I want to order a pizza", ["food_delivery"], ["order_status"])
    assert is_b and "*order_status* (order)" in reason
    assert not borderline("I want to order a pizza", ["order_pizza"], ["order_status"])[0]
    assert not borderline("I want a pizza", ["food_delivery"], ["order_status"])[0]
    # stop words and plural folding
    assert not borderline("Where are my cards", ["card_arrival"], ["where_is_it"])[0]
    assert tokens("Top-Up failed") == {"top", "up", "failed"}


def test_borderline_uses_gold_when_given_and_descriptions() -> None:
    p = _pred(("card_arrival", 0.7, "Where is my card?"), ("exchange_rate", 0.6, "rates?"))
    text = "What rate do I get for my card abroad?"
    # Predicted card_arrival shares "card": not borderline from the predicted side.
    assert not explain(text, p).borderline
    ex = explain(
        text,
        p,
        gold="foreign_payment",
        intents=["foreign_payment"],
        intent_descriptions={"card_arrival": "Card has not arrived"},
    )
    assert ex.borderline and "card_arrival" in ex.borderline_reason
    assert ex.correct is False and ex.gold == ("foreign_payment",)
    assert ex.predicted_description == "Card has not arrived"
    assert ex.runner_up_description is None


def test_k_trims_neighbours() -> None:
    p = _pred(("a", 0.9, "x"), ("b", 0.8, "y"), ("c", 0.7, "z"))
    assert len(explain("q", p, k=2).neighbours) == 2
    assert np.isclose(explain("q", p).to_dict()["runner_up_score"], 0.8)
