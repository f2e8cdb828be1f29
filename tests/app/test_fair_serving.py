"""Issue 13: one user's large batches must not stall everyone. Caps per call and role, a per-user
limit and a bounded queue answered with "busy, retry in a moment", and a one-line predict that
gets through while a 1,000-text batch runs."""

from __future__ import annotations

import dataclasses
import threading
import time
from contextlib import ExitStack

import pytest

from app.access import auth
from app.access.auth import Actor
from app.services.models.predict import predict, predict_one, predict_requests
from app.services.projects.members import add_member
from app.serving.admission import BusyError
from app.serving.state import ServingState
from tests.handles import live

# Each encode runs the encoder's forward pass (tests/encoder_memo.py): its load is what is tested.
pytestmark = pytest.mark.encoder_passes

VIEWER = Actor(3, "vic", "viewer")
DESIGNER = Actor(2, "dana", "designer")
OTHER = Actor(4, "sam", "designer")


def test_a_viewer_sends_at_most_200_utterances_per_call_and_a_designer_1000(serving_state, demo):
    with pytest.raises(
        ValueError,
        match=r"At most 200 utterances per call for a viewer \(this call has 201\): split them",
    ):
        predict(serving_state.live, demo, ["hi"] * 201, who=VIEWER)
    with pytest.raises(ValueError, match=r"At most 1,000 utterances per call for a designer"):
        predict(serving_state.live, demo, ["hi"] * 1001, who=DESIGNER)
    with pytest.raises(ValueError, match="longer than 2000 characters"):
        predict(serving_state.live, demo, ["x" * 2001, "hi"], who=DESIGNER)
    assert (
        len(
            predict(
                serving_state.live, demo, [f"where is order {i}" for i in range(200)], who=VIEWER
            )
        )
        == 200
    )


def test_a_third_batch_of_the_same_user_is_refused_as_busy_but_others_go_on(serving_state, demo):
    with (
        serving_state.live.admission.admit("dana", 500),
        serving_state.live.admission.admit("dana", 500),
    ):
        with pytest.raises(
            BusyError,
            match=r"^Busy: dana already has 2 batch predictions running; retry when one has",
        ):
            predict(serving_state.live, demo, ["where is my parcel", "cancel it"], who=DESIGNER)
        assert (
            predict_one(serving_state.live, demo, "where is my parcel", who=DESIGNER)["top"]
            == "track_order"
        )
        assert (
            len(predict(serving_state.live, demo, ["where is my parcel", "cancel it"], who=OTHER))
            == 2
        )
    assert (
        len(predict(serving_state.live, demo, ["where is my parcel", "cancel it"], who=DESIGNER))
        == 2
    )


def test_a_full_queue_refuses_batches_and_still_answers_one_line(serving_state, demo):
    with ExitStack() as held:
        for user in ("ann", "bob"):  # 4,000 utterances of batches admitted
            held.enter_context(serving_state.live.admission.admit(user, 1000))
            held.enter_context(serving_state.live.admission.admit(user, 1000))
        with pytest.raises(
            BusyError,
            match=r"^Busy: the server is working through other users' batches; retry in a moment",
        ):
            predict(serving_state.live, demo, ["where is my parcel", "cancel it"], who=OTHER)
        assert predict_one(serving_state.live, demo, "I forgot my password", who=OTHER)["top"]


def test_the_one_line_lane_is_bounded_too_and_the_api_micro_batch_says_busy(serving_state, demo):
    with ExitStack() as held:
        for i in range(
            serving_state.live.admission.limits.lines_at_once
        ):  # one each: a user holds at most 8
            held.enter_context(serving_state.live.admission.admit(f"user {i}", 1))
        with pytest.raises(BusyError, match=r"^Busy: too many predictions at once; retry in a"):
            predict_one(serving_state.live, demo, "where is my parcel")
        out = predict_requests(
            serving_state.live, [(demo, "where is my parcel", 1), (demo, "cancel it", 1)]
        )
        assert [r["error"] for r in out] == [
            "Busy: too many predictions at once; retry in a moment."
        ] * 2
    assert (
        predict_requests(serving_state.live, [(demo, "where is my parcel", 1)])[0]["top"]
        == "track_order"
    )


def test_a_refused_or_failed_call_gives_its_place_back(serving_state, demo):
    from app.services.projects.projects import new_project

    new_project(serving_state.db, "empty")
    for _ in range(3):  # more than the per-user limit: each failure released its place
        with pytest.raises(ValueError, match="no labelled training utterances"):
            predict(
                serving_state.live, live(serving_state, "empty"), ["hello", "there"], who=DESIGNER
            )
    assert len(predict(serving_state.live, demo, ["hello", "there"], who=DESIGNER)) == 2


def test_the_api_applies_the_signed_in_users_limits(serving_state, demo):
    from app.ui.main import build_app

    team = ServingState.open(
        dataclasses.replace(serving_state.settings, multi_user=True), database=serving_state.db
    )
    auth.add_user(team.db, "vic", "viewer", "viewer-password")
    add_member(team.db, demo, "vic")
    api = next(f.fn for f in build_app(team).fns.values() if f.api_name == "predict_batch")
    assert api is not None

    class Request:  # what Gradio passes: the signed-in name
        username = "vic"

    import gradio as gr

    with pytest.raises(gr.Error, match="At most 200 utterances per call for a viewer"):
        api(demo, ["hi"] * 201, 1, request=Request())
    with (
        team.live.admission.admit("vic", 10),
        team.live.admission.admit("vic", 10),
        pytest.raises(gr.Error, match="Busy: vic already has 2 batch predictions"),
    ):
        api(demo, ["hi", "there"], 1, request=Request())
    assert len(api(demo, ["hi", "there"], 1, request=Request())) == 2


def test_the_try_tab_says_busy_in_its_status(serving_state, demo):
    from app.ui.try_tab import run

    with ExitStack() as held:
        for i in range(
            serving_state.live.admission.limits.lines_at_once
        ):  # one each: a user holds at most 8
            held.enter_context(serving_state.live.admission.admit(f"user {i}", 1))
        explanation, *_ = run(serving_state.live, demo, "where is my parcel", 1)
    assert "Busy: too many predictions at once; retry in a moment." in explanation


@pytest.mark.slow
def test_a_one_line_predict_is_not_starved_by_a_1000_text_batch(serving_state, demo):
    long_texts = [  # ~20 tokens each: still seconds of work, far beyond the one line's wait
        f"order {i}: my parcel has not arrived, the tracking page has not moved for days"
        for i in range(1000)
    ]
    predict_one(serving_state.live, demo, "warm the pool up")
    batch = threading.Thread(
        target=predict, args=(serving_state.live, demo, long_texts), kwargs={"who": OTHER}
    )
    batch.start()
    deadline = time.monotonic() + 60
    while not serving_state.live.admission.queued:  # the batch is admitted and under way
        assert time.monotonic() < deadline
        time.sleep(0.01)
    time.sleep(0.5)
    started = time.perf_counter()
    assert (
        predict_one(serving_state.live, demo, "where is my parcel", who=DESIGNER)["top"]
        == "track_order"
    )
    waited = time.perf_counter() - started
    assert batch.is_alive(), "the one-line predict waited for the whole batch"
    assert waited < 10
    batch.join(600)
