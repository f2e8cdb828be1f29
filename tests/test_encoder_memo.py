"""The tests' memory of the base encoder's forward passes (tests/encoder_memo.py) gives what the
forward pass gives, and never answers for another model: a trained copy, or a test that asks for
the passes themselves."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from tests import encoder_memo

TEXTS = [f"memo check {i}: where is the card I ordered last week" for i in range(6)]


def test_a_remembered_text_comes_back_as_its_forward_pass_gave_it(encoder):
    encoder_memo.install()
    table = encoder_memo._table(encoder.model)
    assert table is not None, "the loaded base encoder is remembered"
    first = encoder.encode(TEXTS[:4])
    assert set(TEXTS[:4]) <= table.keys()
    # two remembered, two new: in the caller's order, the new ones encoded
    mixed = encoder.encode([TEXTS[3], TEXTS[4], TEXTS[0], TEXTS[5]])
    np.testing.assert_array_equal(mixed[[0, 2]], first[[3, 0]])
    encoder_memo.active(False)
    try:
        passed = encoder.encode([TEXTS[3], TEXTS[4], TEXTS[0], TEXTS[5]])
    finally:
        encoder_memo.active(True)
    np.testing.assert_allclose(mixed, passed, atol=1e-5)


def test_a_trained_copy_of_the_base_model_is_never_answered_from_memory(encoder):
    encoder_memo.install()
    base = encoder.encode(TEXTS[:2])
    changed = copy.deepcopy(encoder.model)  # as training starts from the base (core/training)
    with torch.no_grad():
        for p in changed.parameters():
            p.mul_(0.5)
    assert encoder_memo._table(changed) is None
    vectors = changed.encode(TEXTS[:2], convert_to_numpy=True, normalize_embeddings=True)
    assert not np.allclose(vectors, base, atol=1e-3)


@pytest.mark.encoder_passes
def test_a_test_marked_encoder_passes_runs_every_pass(encoder):
    encoder_memo.install()
    encoder.encode(TEXTS[:2])
    table = encoder_memo._table(encoder.model)
    assert table is not None
    before = set(table)
    encoder.encode(["a text no test remembered before this one, marked to run every pass"] * 2)
    assert set(table) == before
