"""Issue 43, hole 5: one intent with a single example (a typo over REST was enough) made every
retrain of the project fail. Such an intent is left out of training, said in the job's log, and
never blocks a retrain; training still needs two intents it can learn from."""

from __future__ import annotations

import pytest

from core.retrieval.scope import OUT_OF_SCOPE
from core.training import check_trainable, trainable

pytestmark = pytest.mark.fast

TEXTS = ["hi", "hello", "bye", "see you", "no_such_intent_zz typo"]
LABELS = [("greet",), ("greet",), ("bye",), ("bye",), ("no_such_intent_zz",)]


def test_an_intent_with_one_example_is_left_out_of_training_and_blocks_nothing():
    assert check_trainable(LABELS) == ("no_such_intent_zz",)  # it raised before
    fit = trainable(TEXTS, LABELS)
    assert fit.texts == TEXTS[:4] and fit.labels == LABELS[:4]
    assert fit.left_out == ("no_such_intent_zz",)
    assert "Left out of training: 1 intent(s) with fewer than 2 train examples" in fit.note()
    assert "(no_such_intent_zz)" in fit.note() and "anchor" in fit.note()


def test_a_multi_label_row_keeps_its_other_intents_and_unlabelled_rows_stay():
    fit = trainable(
        [*TEXTS[:4], "hi and bye, refund", "what?"],
        [*LABELS[:4], ("greet", "bye", "refund"), ()],
    )
    assert fit.labels[-2:] == [("greet", "bye"), ()]
    assert fit.left_out == ("refund",)
    assert trainable(TEXTS[:4], LABELS[:4]).note() == ""


def test_the_reserved_label_needs_no_count_and_an_unusable_project_is_still_refused():
    assert check_trainable([*LABELS[:4], (OUT_OF_SCOPE,)]) == ()
    with pytest.raises(ValueError, match="No labelled utterances"):
        check_trainable([(), (OUT_OF_SCOPE,)])
    with pytest.raises(
        ValueError,
        match=r"at least 2 intents with 2 or more examples each \(only greet has\); "
        r"too few: bye",
    ):
        check_trainable([("greet",), ("greet",), ("bye",)])
    with pytest.raises(ValueError, match=r"each; too few: a, b"):
        check_trainable([("a",), ("b",)])
    with pytest.raises(ValueError, match="differ in length"):
        trainable(["a"], [])
