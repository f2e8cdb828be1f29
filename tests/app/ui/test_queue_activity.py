"""The Label tab's card handlers are a person's answers: while one runs, the process's background
(a pool's calibration, the queue's scores, a long encode) waits for it
(:func:`app.ui.queue_activity.holding`, :meth:`core.encoding.fair_share.Turns.person`)."""

from __future__ import annotations

import threading
from typing import cast

import pytest

from app.perimeter.in_use import Working
from app.ui.queue_activity import holding
from core.encoding.fair_share import SHARED

pytestmark = pytest.mark.fast


def test_a_card_handler_holds_the_background_until_it_returns():
    said: list[bool] = []

    def card() -> str:  # no project among its arguments: nothing written, a person still waits
        background = threading.Thread(target=lambda: said.append(SHARED.after_people(0.05)))
        background.start()
        background.join(10)
        return "the next card"

    assert holding(cast(Working, None))(card)() == "the next card"
    said.append(SHARED.after_people(timeout=0))
    assert said == [False, True]  # held while the card was computed, free once it returned
