"""A promotion nobody waits for (issue 71 item 5): when another version starts serving, the
server's pool of the version before it answers on (its rows kept up to date: a label counts at
once) while the new version's pool is built in the background, and takes its place once ready.
Real SQLite, the test session's tiny encoder, two real versions."""

from __future__ import annotations

import pytest

from app.services.labelling import data as data_svc
from app.services.models import versions as version_svc
from tests.handles import live
from tests.samples import make_tiny, retrain

pytestmark = pytest.mark.slow


def test_a_new_version_s_pool_is_built_in_the_background_while_the_one_before_answers(
    serving_state, tiny_encoder
) -> None:
    make_tiny(serving_state, encoder=tiny_encoder)
    v1 = retrain(serving_state, "tiny").model_version_id
    data_svc.add_utterance(
        serving_state.db, live(serving_state, "tiny"), "card gone again", "card_lost", "train"
    )
    v2 = retrain(serving_state, "tiny").model_version_id
    p = live(serving_state, "tiny")
    serving_state.live.switch_in_background = True
    assert serving_state.live.pool(p.id).model_version_id == v2  # a first pool is built on the call
    version_svc.activate(
        serving_state.factories, live(serving_state, "tiny"), v1
    )  # a rollback: v1 serves now
    # while v1's model is loading (the models' lock, which its load takes, held here)
    with serving_state.models._lock:
        answering = serving_state.live.pool(p.id)
        assert answering.model_version_id == v2  # the call did not wait for v1's pool
        assert serving_state.live.switching(p.id)
        # a label given meanwhile counts at once, in the space that answers
        data_svc.add_utterance(
            serving_state.db, live(serving_state, "tiny"), "my card was taken", "card_lost", "train"
        )
        meanwhile = serving_state.live.pool(p.id)
        assert meanwhile is answering
        assert "my card was taken" in {text for text, _ in meanwhile.items.values()}
    serving_state.live.switches.wait(60)
    now = serving_state.live.pool(p.id)
    assert now.model_version_id == v1 and not serving_state.live.switching(p.id)
    assert "my card was taken" in {text for text, _ in now.items.values()}
    predicted = now.predictor.tops(now.encoder.encode(["where did my card go"]))
    assert predicted.intents[0] in {"card_lost", "balance", "greeting", "refund"}


def test_without_the_background_switch_the_call_builds_the_new_pool_itself(
    serving_state, tiny_encoder
) -> None:
    """The worker and the CLI (no one waits on a key there) build it on the call, as before."""
    make_tiny(serving_state, encoder=tiny_encoder)
    v1 = retrain(serving_state, "tiny").model_version_id
    data_svc.add_utterance(
        serving_state.db, live(serving_state, "tiny"), "card gone again", "card_lost", "train"
    )
    v2 = retrain(serving_state, "tiny").model_version_id
    p = live(serving_state, "tiny")
    assert serving_state.live.pool(p.id).model_version_id == v2
    version_svc.activate(serving_state.factories, live(serving_state, "tiny"), v1)
    assert serving_state.live.pool(p.id).model_version_id == v1
