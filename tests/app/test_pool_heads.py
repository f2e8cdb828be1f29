"""The background fitter of live pools' multi-label heads (:mod:`app.serving.pool_heads`): a burst of
changes shares one fit, a change during a fit gets a fit of its own after it, one project's
failure does not stop another's, and a closed fitter drops what was not started."""

from __future__ import annotations

import itertools
import threading
import time

from app.serving.pool_heads import HeadFitter


def test_a_burst_shares_one_fit_and_a_change_during_a_fit_gets_another():
    started, release = threading.Event(), threading.Event()
    fitted: list[int] = []

    def fit(project_id: int) -> None:
        fitted.append(project_id)
        started.set()
        release.wait(10)

    fitter = HeadFitter(fit, delay=0.05)
    for _ in range(5):
        fitter.request(1)
    assert started.wait(10)
    fitter.request(1)  # a label written while the fit runs
    assert not fitter.settle(timeout=0.2)  # the first fit is still running
    release.set()
    assert fitter.settle(timeout=10)
    assert fitted == [1, 1]
    fitter.close()


def test_a_failed_fit_does_not_stop_the_next_projects():
    fitted: list[int] = []

    def fit(project_id: int) -> None:
        if project_id == 1:
            raise RuntimeError("broken project")
        fitted.append(project_id)

    fitter = HeadFitter(fit, delay=0.0)
    fitter.request(1)
    fitter.request(2)
    assert fitter.settle(timeout=10)
    assert fitted == [2]
    fitter.close()


def test_a_closed_fitter_drops_the_fits_not_started():
    fitted: list[int] = []
    fitter = HeadFitter(fitted.append, delay=60.0)
    fitter.request(3)
    fitter.close()
    fitter.request(4)
    assert fitter.settle(timeout=1)
    assert fitted == []


def test_a_projects_next_fit_waits_as_long_as_its_last_one_took():
    """An annotator labelling without pause: requests keep coming during and after each fit, and
    the fitter still rests between two fits of the project as long as the first one took."""
    spans: list[tuple[float, float]] = []

    def fit(project_id: int) -> None:
        begun = time.monotonic()
        time.sleep(0.4)
        spans.append((begun, time.monotonic()))

    fitter = HeadFitter(fit, delay=0.0)
    fitter.request(1)
    end = time.monotonic() + 1.5
    while time.monotonic() < end:  # a label every 20 ms
        fitter.request(1)
        time.sleep(0.02)
    assert fitter.settle(timeout=10)
    fitter.close()
    assert len(spans) >= 2
    for (_, first_end), (second_start, _) in itertools.pairwise(spans):
        assert second_start - first_end >= 0.4 - 0.01  # rested as long as the fit took
    # another project is not held back by this one's rest
    other: list[float] = []
    fitter = HeadFitter(lambda pid: (time.sleep(0.3), other.append(time.monotonic())), delay=0.0)
    fitter.request(1)
    fitter.request(2)
    assert fitter.settle(timeout=10)
    fitter.close()
    assert len(other) == 2 and other[1] - other[0] < 0.3 + 0.2


def test_close_stops_a_real_fit_under_way_and_waits_for_it():
    """Issue 45 row 6: a process that ended during a fit exited 134 (torch cut off on the
    fitter's thread). A fit polls :attr:`HeadFitter.closed` each epoch; close() stops it and
    returns only once its thread has ended."""
    import numpy as np

    from core.multilabel.head import Cancelled, HeadConfig, MultiLabelHead

    started = threading.Event()
    ended: list[str] = []
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(400, 32)).astype("float32")
    labels = [("a", "b") if i % 3 == 0 else ("a",) if i % 3 == 1 else ("b",) for i in range(400)]

    def fit(project_id: int) -> None:
        config = HeadConfig(epochs=100_000, max_steps=None)  # minutes, unless stopped
        try:
            MultiLabelHead(config).fit(
                vectors,
                labels,
                progress=lambda epoch, epochs: started.set(),  # its epochs have begun
                should_cancel=lambda: fitter.closed,
            )
            ended.append("fitted")
        except Cancelled:
            ended.append("stopped")

    fitter = HeadFitter(fit, delay=0.0)
    fitter.request(1)
    assert started.wait(120)
    asked = time.monotonic()
    fitter.close()
    assert ended == ["stopped"]
    assert time.monotonic() - asked < 10
    assert fitter._thread is not None and not fitter._thread.is_alive()


def test_a_fit_with_a_longer_rest_waits_that_many_times_its_duration():
    """The pools' calibrations rest 4x their duration (app.serving.live.CALIBRATION_REST): a
    person labelling without pause had one after nearly every label."""
    spans: list[tuple[float, float]] = []

    def fit(project_id: int) -> None:
        begun = time.monotonic()
        time.sleep(0.1)
        spans.append((begun, time.monotonic()))

    fitter = HeadFitter(fit, delay=0.0, rest=4.0)
    fitter.request(1)
    end = time.monotonic() + 1.5
    while time.monotonic() < end:
        fitter.request(1)
        time.sleep(0.02)
    assert fitter.settle(timeout=10)
    fitter.close()
    assert 2 <= len(spans) <= 4  # rest 1 would fit about 7 times in 1.5 s
    for (first_start, first_end), (second_start, _) in itertools.pairwise(spans):
        assert second_start - first_end >= 4 * (first_end - first_start) - 0.01


def test_a_fit_waits_for_the_card_a_person_waits_for():
    """A card being computed (``SHARED.person()``: the Label tab's key handlers) goes first: a
    fit due meanwhile starts once it is shown."""
    from core.encoding.fair_share import SHARED

    started: list[float] = []
    fitter = HeadFitter(lambda pid: started.append(time.monotonic()), delay=0.0)
    card_shown = threading.Event()

    def card() -> None:
        with SHARED.person():
            fitter.request(1)
            time.sleep(0.3)
            card_shown.set()

    thread = threading.Thread(target=card)
    begun = time.monotonic()
    thread.start()
    thread.join(10)
    assert fitter.settle(timeout=10)
    fitter.close()
    assert card_shown.is_set() and len(started) == 1
    assert started[0] - begun >= 0.3 - 0.01
