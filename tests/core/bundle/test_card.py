"""Issue 66 item 6: a bundle's model card wrote its metrics as raw Python dicts (a BANKING77
card: 60-88 KB, the per-intent scores and the 77 x 77 confusion matrix each one table cell). The
card now shows tables a person reads: the headline numbers beside the frozen base's, every
intent weakest first, the pairs most often confused, each check as a short list."""

from __future__ import annotations

import numpy as np
import pytest

from core.bundle import model_card
from core.evaluation.scoring import score_predictions

pytestmark = pytest.mark.fast


def _banking_like_metrics(seed: int) -> dict:
    """A version's record as a retrain stores it, for 77 intents and 3,080 test rows (the
    scores are the app's own, of predictions right 90 % of the time)."""
    rng = np.random.default_rng(seed)
    names = [f"intent_{i:02d}_{'x' * (i % 9)}" for i in range(77)]
    gold = [names[i % 77] for i in range(3080)]
    predicted = [g if rng.random() < 0.9 else names[int(rng.integers(77))] for g in gold]
    record = score_predictions([(g,) for g in gold], predicted)
    record.update(
        split="test",
        k=1,
        silhouette=0.31,
        encoder="int8",
        gate={"passed": True, "reason": "accuracy within 0.01 of v2", "tolerance": 0.01},
        int8={"passed": True, "agreement": 0.996, "n": 1000, "variant": "blockwise-32"},
        oos_calibration={"method": "held-out", "map": {"x": list(np.linspace(0, 1, 50))}},
    )
    return record


def test_the_model_card_shows_metrics_as_tables_not_dicts():
    metrics, base = _banking_like_metrics(1), _banking_like_metrics(2)
    card = model_card(
        {"project": "banking", "intents": {f"i{i}": 10 for i in range(77)}, "metrics": metrics,
         "base_metrics": base}
    )  # fmt: skip
    assert len(card.encode()) < 16_000, len(card.encode())
    assert "{'" not in card and "[[" not in card  # no Python dict or matrix anywhere
    assert "Measured on 3080 utterances of the test split, with the int8 encoder" in card
    accuracy = f"| accuracy | {metrics['accuracy']:.4f} | {base['accuracy']:.4f} |"
    assert accuracy in card
    lines = card.splitlines()
    per_intent = lines.index("| intent | precision | recall | F1 | support |")
    rows = lines[per_intent + 2 : per_intent + 2 + 77]
    f1 = [float(r.split(" | ")[3]) for r in rows]
    assert f1 == sorted(f1) and len({r.split(" | ")[0] for r in rows}) == 77  # weakest first
    confused = lines.index("| intent | predicted as | times |")
    assert lines[confused + 2].count("|") == 4 and "more pair(s) in manifest.json" in card
    assert "- passed: yes" in card and "- variant: blockwise-32" in card
    assert "- map.x: [0.0000, 0.0204," in card and "42 more]" in card  # a long list, cut
