from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from core.encoding.fair_share import Turns
from core.encoding.registry import Encoder


def _queue_up(turns: Turns, order: list[str], name: str, *, urgent: bool) -> threading.Thread:
    """Start a thread that waits for a turn and records ``name`` when it gets it; returns once
    the thread is in the line."""
    before = turns.waiting()

    def take() -> None:
        with turns.turn(urgent=urgent):
            order.append(name)

    thread = threading.Thread(target=take)
    thread.start()
    deadline = time.monotonic() + 10
    while turns.waiting() == before:
        assert time.monotonic() < deadline, "the thread never queued"
        time.sleep(0.005)
    return thread


def test_an_urgent_turn_goes_before_chunks_that_waited_longer():
    turns = Turns()
    order: list[str] = []
    with turns.turn(urgent=False):  # a chunk of a long request is running
        threads = [
            _queue_up(turns, order, "batch chunk 1", urgent=False),
            _queue_up(turns, order, "batch chunk 2", urgent=False),
            _queue_up(turns, order, "one line", urgent=True),
        ]
    for t in threads:
        t.join(10)
    assert order == ["one line", "batch chunk 1", "batch chunk 2"]
    assert turns.waiting() == 0


@pytest.mark.encoder_passes  # the passes' time (tests/encoder_memo.py)
def test_a_long_encode_is_chunked_and_keeps_the_input_order(encoder):
    """Texts of very different lengths (sorted longest first inside) come back in input order,
    equal to encoding each alone."""
    own = Encoder(encoder.model, encoder.name, encoder.fingerprint, turns=Turns())
    texts = [("word " * (i % 7 * 20)) + f"text {i}" for i in range(16)]
    vectors = own.encode(texts, batch_size=4)
    alone = np.concatenate([own.encode([t]) for t in texts[:5]])
    np.testing.assert_allclose(vectors[:5], alone, atol=1e-4)
    assert own.chunk_size("x" * 2000, 64) <= own.chunk_size("hi", 64)


@pytest.mark.encoder_passes  # the passes' time (tests/encoder_memo.py)
def test_a_one_line_encode_is_not_stuck_behind_a_long_one(encoder):
    own = Encoder(encoder.model, encoder.name, encoder.fingerprint, turns=Turns())
    long_texts = [
        f"{i} " + "my parcel has not arrived and nobody answers " * 10 for i in range(200)
    ]
    under_way = threading.Event()
    batch = threading.Thread(
        target=own.encode, args=(long_texts,), kwargs={"progress": lambda *_: under_way.set()}
    )
    batch.start()
    assert under_way.wait(60)  # its first chunk is done
    own.encode(["where is my parcel"])
    assert batch.is_alive(), "the one-line encode waited for the whole batch"
    batch.join(300)


def test_a_background_turn_waits_for_a_persons_card_an_urgent_one_does_not():
    """While another thread computes a card a person waits for, a chunk that is not urgent
    waits for it (for the card's first PERSON_WAIT_S at most); a one-line request does not, and
    neither does the card's own thread (its own long encode goes on)."""
    from core.encoding import fair_share

    turns = Turns()
    order: list[str] = []
    card_in, card_out = threading.Event(), threading.Event()

    def card() -> None:
        with turns.person():
            with turns.turn(urgent=False):  # the card's own long encode: no wait on itself
                order.append("card's own chunk")
            card_in.set()
            card_out.wait(10)
            order.append("card shown")

    person = threading.Thread(target=card)
    person.start()
    assert card_in.wait(10)
    background = _queue_up(turns, order, "background chunk", urgent=False)

    def one_line() -> None:  # it goes at once: no _queue_up, which waits to see it queued
        with turns.turn(urgent=True):
            order.append("one line")

    predict = threading.Thread(target=one_line)
    predict.start()
    predict.join(10)
    time.sleep(0.2)
    assert order == ["card's own chunk", "one line"]  # the background chunk still waits
    card_out.set()
    person.join(10)
    background.join(10)
    assert order == ["card's own chunk", "one line", "card shown", "background chunk"]
    assert turns.after_people(timeout=0)

    # a long card (a first card that encodes a batch) holds the background for its first
    # PERSON_WAIT_S only: a chunk asked for 0.3 s into it goes PERSON_WAIT_S after the card
    # began, the next one at once
    held = threading.Event()

    def long_card() -> None:
        with turns.person():
            held.set()
            time.sleep(fair_share.PERSON_WAIT_S + 1.0)

    slow = threading.Thread(target=long_card)
    began = time.monotonic()
    slow.start()
    assert held.wait(10)
    time.sleep(0.3)
    with turns.turn(urgent=False):
        first = time.monotonic() - began
    with turns.turn(urgent=False):
        second = time.monotonic() - began
    assert turns.after_people(timeout=0)  # the card still runs, and holds nothing any more
    slow.join(10)
    assert fair_share.PERSON_WAIT_S - 0.05 <= first < fair_share.PERSON_WAIT_S + 0.5
    assert second - first < 0.2
