"""The ETA rule, on a fake clock: estimated from timed units only, nothing before a measurement."""

from __future__ import annotations

import pytest

from core.training.eta import Eta

pytestmark = pytest.mark.fast


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_there_is_no_estimate_until_steps_after_the_first_have_been_timed() -> None:
    clock = FakeClock()
    eta = Eta(300, skip=1, min_updates=2, clock=clock)
    clock.now = 7.0  # the first step, with the model load before it
    assert eta.update(1) is None
    clock.now = 8.0
    assert eta.update(2) is None  # one timed step is not yet a measurement
    clock.now = 9.0
    assert eta.update(3) == pytest.approx(297.0)


def test_a_slow_first_step_does_not_inflate_the_first_estimate() -> None:
    """The BANKING77 run: model loading and the first step took ~7 s, then ~1 s a step; the old
    rule (elapsed since start / steps done × steps left) said 2,044 s for a 308 s run."""
    clock = FakeClock()
    total = 300
    eta = Eta(total, clock=clock)
    clock.now = 7.0
    first = None
    for step in range(1, total + 1):
        first = first if first is not None else eta.update(step)
        clock.now += 1.0 + 0.3 * (step % 3 == 0)  # uneven steps, 1.1 s on average
    real_left = clock.now - 7.0 - 3 * 1.1  # what was left when the first estimate came
    assert first is not None
    assert real_left / 2 <= first <= real_left * 2
    old_rule = 7.0 / 1 * (total - 1)
    assert old_rule > 2 * real_left  # the rule it replaces was off by more than 2x


def test_the_estimate_follows_the_measured_rate_and_ends_at_zero() -> None:
    clock = FakeClock()
    eta = Eta(1_000, skip=64, min_updates=1, clock=clock)
    clock.now = 3.0
    assert eta.update(64) is None  # the first batch: not timed
    clock.now = 4.0
    assert eta.update(192) == pytest.approx((1_000 - 192) / 128)  # 128 units a second
    clock.now = 4.0
    assert eta.update(192) == pytest.approx((1_000 - 192) / 128)  # no new units: same rate
    assert eta.update(1_000) == 0.0


def test_work_with_nothing_to_do_is_done_at_once() -> None:
    assert Eta(0, clock=FakeClock()).update(0) == 0.0


@pytest.mark.parametrize(
    "kwargs", [{"total": -1}, {"total": 5, "skip": -1}, {"total": 5, "min_updates": 0}]
)
def test_impossible_settings_are_refused(kwargs) -> None:
    with pytest.raises(ValueError, match="must be >= 0"):
        Eta(**kwargs)
