from __future__ import annotations

import json

import numpy as np
import pytest

from core.evaluation.scoring import cross_validate_knn, evaluate_knn, score_predictions
from core.retrieval.factory import PredictorFactory, vector_pool

pytestmark = pytest.mark.fast


def _pool() -> tuple[np.ndarray, list[str]]:
    vecs = np.array([[1, 0, 0], [0.9, 0.1, 0], [0, 1, 0], [0.1, 0.9, 0], [0, 0, 1], [0, 0.1, 0.9]])
    return vecs.astype(np.float32), ["a", "a", "b", "b", "c", "c"]


def test_hand_made_case() -> None:
    train, labels = _pool()
    test = np.array([[1, 0.05, 0], [0.2, 1, 0], [0.8, 0, 0.3], [0, 0.05, 1]], dtype=np.float32)
    truth = ["a", "b", "c", "c"]  # the third is misread as "a"
    out = evaluate_knn(vector_pool(train, labels), test, truth)
    assert out["primary"] == "accuracy"
    assert out["accuracy"] == pytest.approx(0.75)
    assert out["per_intent"]["a"] == {
        "precision": 0.5,
        "recall": 1.0,
        "f1": pytest.approx(2 / 3),
        "support": 1,
    }
    assert out["per_intent"]["c"]["recall"] == 0.5
    assert out["macro_f1"] == pytest.approx((2 / 3 + 1 + 2 / 3) / 3)
    assert out["confusion"] == {
        "labels": ["a", "b", "c"],
        "matrix": [[1, 0, 0], [0, 1, 0], [1, 0, 1]],
    }
    assert isinstance(out["silhouette"], float)
    json.dumps(out)  # plain JSON types only


def test_k3_uses_mean_of_nearest_examples() -> None:
    train, labels = _pool()
    out = evaluate_knn(vector_pool(train, labels, k=2), train, labels)
    assert out["accuracy"] == 1.0 and out["k"] == 2


def test_silhouette_is_none_when_undefined() -> None:
    train, labels = _pool()
    assert evaluate_knn(vector_pool(train, labels), train[:2], ["a", "a"])["silhouette"] is None


def test_cross_validation_scores_every_example_once() -> None:
    rng = np.random.default_rng(0)
    centres = np.eye(4, 8, dtype=np.float32)
    vecs = np.concatenate([c + 0.05 * rng.standard_normal((5, 8)) for c in centres])
    labels = [n for n in "wxyz" for _ in range(5)]
    out = cross_validate_knn(PredictorFactory.for_vectors(8), vecs, labels, folds=5, seed=0)
    assert out["accuracy"] == 1.0
    assert sum(v["support"] for v in out["per_intent"].values()) == 20
    assert out["folds"] == 5


def test_errors_are_clear() -> None:
    train, labels = _pool()
    with pytest.raises(ValueError, match="pool is empty"):
        evaluate_knn(vector_pool(train[:0].reshape(0, 3), []), train, labels)
    with pytest.raises(ValueError, match="differ in length"):
        evaluate_knn(vector_pool(train, labels), train, labels[:-1])
    factory = PredictorFactory.for_vectors(3)
    with pytest.raises(ValueError, match="folds must be at least 2"):
        cross_validate_knn(factory, train, labels, folds=1)
    with pytest.raises(ValueError, match="Need at least 5"):
        cross_validate_knn(factory, train[:3], labels[:3], folds=5)
    with pytest.raises(ValueError, match="no test examples"):
        score_predictions([], [])


def test_a_multi_intent_row_is_a_hit_when_either_intent_is_predicted_everywhere():
    from core.evaluation import cross_validate_knn, evaluate_knn, score_predictions, scoring_gold

    gold = [("cancel", "refund"), ("cancel", "refund"), ("greet",)]
    predicted = ["refund", "greet", "greet"]
    m = score_predictions(gold, predicted)
    assert m["accuracy"] == pytest.approx(2 / 3)
    assert [scoring_gold(g, p) for g, p in zip(gold, predicted, strict=True)] == [
        "refund",
        "cancel",
        "greet",
    ]
    # the vector evaluators use the same rule: a pool row with two intents votes for both
    pool = np.eye(3, dtype=np.float32)
    test = np.array([[0.9, 0.1, 0], [0.1, 0.9, 0], [0, 0, 1]], dtype=np.float32)
    scored = evaluate_knn(
        vector_pool(pool, [("a",), ("b", "c"), ("d",)]), test, [("a",), ("b", "x"), ("d",)]
    )
    assert scored["accuracy"] == 1.0
    cv = cross_validate_knn(
        PredictorFactory.for_vectors(3),
        np.vstack([pool, pool]),
        [("a",), ("b",), ("c",)] * 2,
        folds=2,
    )
    assert cv["accuracy"] == 1.0 and cv["primary"] == "accuracy"
