"""The labelling queue on the demo project (real SQLite, real encoder, real faiss): orders, the
model in the loop, and every answer written by the one labelling rule."""

from __future__ import annotations

import pytest

from app.services.labelling import data as data_svc
from app.services.labelling import history
from app.services.queue import queue as q


def _unlabelled(serving_state, demo) -> set[int]:
    return {r["id"] for r in data_svc.table(serving_state.db, demo, split="unlabelled")}


@pytest.mark.parametrize("how", ["useful", "uncertain", "diverse", "file"])
def test_every_order_offers_only_unlabelled_utterances_and_leaves_out_skipped_ones(
    serving_state, demo, how
):
    pending = _unlabelled(serving_state, demo)
    ids = q.order(serving_state.live, demo, how, limit=len(pending))
    assert set(ids) == pending and len(ids) == len(pending)
    skipped = ids[:2]
    assert not set(skipped) & set(
        q.order(serving_state.live, demo, how, exclude=skipped, limit=len(pending))
    )


def test_most_uncertain_first_puts_the_smallest_margins_first(serving_state, demo):
    ids = q.order(serving_state.live, demo, "uncertain", limit=50)
    margins = []
    for uid in ids:
        item = q.item(serving_state.live, demo, uid)
        assert item is not None
        margins.append(item.suggestions[0].score - item.suggestions[1].score)
    assert margins == sorted(margins)


def test_most_useful_next_is_the_default_and_spreads_the_uncertain_ones_out(serving_state, demo):
    from app.services.projects.io import import_utterances
    from storage.utterances import NewUtterance

    assert q.DEFAULT_ORDER == "useful" and next(iter(q.ORDERS)) == "useful"
    first = q.item(
        serving_state.live, demo, q.order(serving_state.live, demo, "uncertain", limit=1)[0]
    )
    assert first is not None
    # three near-twins of the most uncertain utterance: just as uncertain, nothing new to learn
    twins = [f"{first.text}{tail}" for tail in ("!", " please", " thanks")]
    import_utterances(serving_state.db, demo, [NewUtterance(t, (), "unlabelled") for t in twins])
    texts = {r["id"]: r["text"] for r in data_svc.table(serving_state.db, demo, split="unlabelled")}
    family = {first.text, *twins}
    uncertain = [texts[i] for i in q.order(serving_state.live, demo, "uncertain", limit=5)]
    useful = [texts[i] for i in q.order(serving_state.live, demo, limit=5)]
    assert len(family & set(uncertain)) >= 2  # margin alone puts twins side by side at the top
    assert len(family & set(useful)) <= 1  # spread out: never two near-twins in a chunk
    shortlist = {texts[i] for i in q.order(serving_state.live, demo, "uncertain", limit=20)}
    assert set(useful) <= shortlist  # still among the most uncertain


def test_near_an_intent_starts_with_the_utterances_most_like_its_examples(serving_state, demo):
    first = q.item(
        serving_state.live, demo, q.order(serving_state.live, demo, "near", near="refund_status")[0]
    )
    assert first is not None and "refund_status" in [s.intent for s in first.suggestions]
    with pytest.raises(ValueError, match="Pick the intent"):
        q.order(serving_state.live, demo, "near")


def test_a_taken_suggestion_joins_the_pool_and_counts_in_the_next_suggestion(serving_state, demo):
    item, ahead = q.next_item(serving_state.live, demo, [], "file")
    assert item is not None and len(item.suggestions) == 3
    before = q.remaining(serving_state.db, demo)
    target = item.suggestions[-1].intent  # the third suggestion, not what the model would pick
    q.answer(serving_state.live, demo, item.id, "take", [target], expected_version=item.version)
    assert q.remaining(serving_state.db, demo) == before - 1
    assert q.item(serving_state.live, demo, item.id) is None  # answered: out of the queue
    row = next(r for r in data_svc.table(serving_state.db, demo) if r["id"] == item.id)
    assert (row["intents"], row["split"]) == (target, "train")
    from app.services.models.predict import predict

    again = predict(serving_state.live, demo, [item.text])[0]
    assert again["top"] == target and again["score"] == pytest.approx(1.0, abs=1e-4)
    nxt, _ = q.next_item(serving_state.live, demo, ahead, "file")
    assert nxt is not None and nxt.id != item.id


def test_test_none_and_delete_answers_and_undo_brings_a_deleted_item_back(serving_state, demo):
    a, b, c = q.order(serving_state.live, demo, "file", limit=3)
    q.answer(serving_state.live, demo, a, "test", ["refund_status"])
    q.answer(serving_state.live, demo, b, "none")
    q.answer(serving_state.live, demo, c, "delete")
    rows = {r["id"]: (r["intents"], r["split"]) for r in data_svc.table(serving_state.db, demo)}
    assert rows[a] == ("refund_status", "test") and rows[b] == ("", "train") and c not in rows
    assert not {a, b} & set(q.order(serving_state.live, demo, "file", limit=100))
    text_count = len(_unlabelled(serving_state, demo))
    assert "delete" in history.undo(serving_state.db, demo)
    assert len(_unlabelled(serving_state, demo)) == text_count + 1  # back in the queue
    with pytest.raises(ValueError, match="Pick an intent"):
        q.answer(serving_state.live, demo, a, "take", [])


def test_an_item_someone_else_answered_is_passed_over(serving_state, demo):
    first, second = q.order(serving_state.live, demo, "file", limit=2)
    data_svc.label_utterance(
        serving_state.db, demo, first, ["refund_status"]
    )  # another annotator, meanwhile
    item, _ = q.next_item(serving_state.live, demo, [first, second], "file")
    assert item is not None and item.id == second


def test_the_orders_margins_are_the_predictors_own_top_two_margins(serving_state, demo):
    import numpy as np

    from core.labelling.frontier import margins

    pool = serving_state.live.pool(demo.id)
    texts = [r["text"] for r in data_svc.table(serving_state.db, demo, split="unlabelled")]
    vectors = serving_state.live.cache.encode(pool.encoder, texts)
    ranked = np.asarray(pool.predictor.tops(vectors).margins)
    assert np.allclose(margins(pool.predictor, vectors), ranked, atol=1e-5)


def test_a_new_versions_space_without_the_candidates_vectors_does_not_make_a_key_encode_them(
    serving_state,
):
    """Issue 63 item 3: an anytime retrain switches the space that serves two or three times in
    a minute, and the first order in a new space encoded every candidate (2,000 on BANKING77:
    seconds) on a key's path. Until the space that serves has them, the last space that had them
    all orders the queue; a key encodes at most a few."""
    from app import worker
    from app.services.queue import queue_order
    from app.services.training import retrain_jobs as train_svc
    from app.services.training.retrain_serve import first_card_vectors
    from tests.handles import live
    from tests.samples import QUICK, make_tiny

    make_tiny(serving_state)
    tiny = live(serving_state, "tiny")
    for i in range(queue_order.ENCODE_ON_KEY + 40):
        data_svc.add_utterance(
            serving_state.db, tiny, f"something else entirely number {i}", None, "unlabelled"
        )
    q.order(serving_state.live, tiny.handle())  # the base orders them: its space has them all
    base_pool = serving_state.live.ordered[tiny.id]
    view, _ = train_svc.request_retrain(serving_state.training, tiny, QUICK, enqueue=False)
    worker.execute_job(serving_state, view.id, anytime=False)  # leaves the candidates to the app
    from app.services.models import versions as version_svc

    version = train_svc.job(serving_state.training, view.id).model_version_id
    version_svc.activate(serving_state.factories, tiny.handle(), version)
    before = serving_state.live.cache.encoded
    first = q.order(serving_state.live, tiny.handle())
    assert serving_state.live.cache.encoded - before <= queue_order.ENCODE_ON_KEY
    assert serving_state.live.ordered[tiny.id] is base_pool and first
    first_card_vectors(
        serving_state.live, tiny.id
    )  # the worker encodes them in the space that stays
    q.order(serving_state.live, tiny.handle())
    assert serving_state.live.ordered[tiny.id].model_version_id == version
    assert base_pool.model_version_id is None
