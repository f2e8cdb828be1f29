"""Every row counts for the Label queue (issue 72 items 1-3), on small projects with the limits
lowered (real SQLite, real encoder, real faiss): the orders see rows past what they used to look
at (the first ``MAX_CANDIDATES`` unlabelled rows in file order), the first card does not wait
for the rest to be encoded, and the background's encoding (through the embedding cache, in
chunks) is what a restart goes on from."""

from __future__ import annotations

import pytest

from app.services.labelling import data as data_svc
from app.services.projects.io import import_utterances
from app.services.queue import queue as q
from app.services.queue import queue_order
from storage.utterances import NewUtterance

CAP = 30  # the old cap lowered: it was the first 5,000 unlabelled rows of the file


def _filler(n: int, start: int = 0) -> list[NewUtterance]:
    """Unlabelled rows placed before the rows that matter: plain questions about where an
    order is (the model is sure of them), none like the rows a test looks for."""
    return [
        NewUtterance(f"where is my parcel with order number AC-{10_000 + i}", (), "unlabelled")
        for i in range(start, start + n)
    ]


@pytest.fixture
def capped(monkeypatch):
    """The orders' limit on the candidates they refresh and pick from lowered to :data:`CAP`
    (before issue 72: the first ``MAX_CANDIDATES`` unlabelled rows in file order)."""
    monkeypatch.setattr(queue_order, "MAX_CANDIDATES", CAP, raising=False)


def test_near_an_intent_finds_rows_past_the_old_cap(serving_state, demo, capped):
    late = ["where is my refund please", "how long do refunds take to process"]  # near-twins
    import_utterances(
        serving_state.db,
        demo,
        [*_filler(2 * CAP), *(NewUtterance(t, (), "unlabelled") for t in late)],
    )
    texts = {r["id"]: r["text"] for r in data_svc.table(serving_state.db, demo, split="unlabelled")}
    assert sorted(texts).index(min(i for i, t in texts.items() if t in late)) > CAP
    picked = [
        texts[i] for i in q.order(serving_state.live, demo, "near", near="refund_status", limit=5)
    ]
    assert set(late) == set(picked[:2]), picked


def test_the_queues_orders_consider_rows_past_the_old_cap(serving_state, capped):
    """Past the old cap sit a row between two intents' near-twin examples (uncertain) and a
    row like nothing labelled; before it, rows the model is sure of. Each order's first pick
    is the best of every row by its own measure (computed here over all of them), past the
    cap."""
    import numpy as np

    from tests.handles import live
    from tests.samples import make_tiny

    make_tiny(serving_state)
    tiny = live(serving_state, "tiny")
    sure = [
        NewUtterance(f"what is the balance of my account number {1000 + i}", (), "unlabelled")
        for i in range(2 * CAP)
    ]
    twins = [
        NewUtterance("please close my whole account today.", ("topic_one",), "train"),
        NewUtterance("please close my whole account today!", ("topic_two",), "train"),
    ]
    late = ["please close my whole account today", "zq blorf vexl kwartz plimsoll 8812 ##"]
    import_utterances(
        serving_state.db,
        tiny.handle(),
        [*twins, *sure, *(NewUtterance(t, (), "unlabelled") for t in late)],
    )
    rows = data_svc.table(serving_state.db, tiny, split="unlabelled")
    ids, texts = [r["id"] for r in rows], [r["text"] for r in rows]
    pool = serving_state.live.pool(tiny.id)
    vectors = serving_state.live.cache.encode(pool.encoder, texts)
    _, _, _, examples = pool.index.examples()
    least_sure = ids[int(np.argmin(pool.predictor.tops(vectors).margins))]
    least_covered = ids[int(np.argmin((vectors @ examples.T).max(axis=1)))]
    assert sorted(ids).index(least_sure) >= 2 * CAP and sorted(ids).index(least_covered) >= 2 * CAP
    assert q.order(serving_state.live, tiny.handle(), "uncertain", limit=3)[0] == least_sure
    assert q.order(serving_state.live, tiny.handle(), "diverse", limit=3)[0] == least_covered
    useful = q.order(serving_state.live, tiny.handle(), "useful", limit=5)  # uncertain, spread out
    assert useful[0] in (least_sure, least_covered)


def test_the_first_card_comes_before_the_pool_is_encoded(serving_state, demo, monkeypatch):
    """A first batch is encoded and ordered at once; the rest of the rows are not encoded on
    the card's path, and the background brings them in (every row then)."""
    monkeypatch.setattr(queue_order, "FIRST_BATCH", 40, raising=False)
    import_utterances(serving_state.db, demo, _filler(300))
    unlabelled = q.remaining(serving_state.db, demo)
    serving_state.live.pool(demo.id)  # the labelled pool, in its space
    before = serving_state.live.cache.encoded
    item, upcoming = q.next_item(serving_state.live, demo, [], "useful")
    assert item is not None and upcoming
    assert (
        serving_state.live.cache.encoded - before <= 40 + 1
    )  # the first batch (and the card's own)
    from app.serving import row_encoding

    spaces = row_encoding.spaces_of(serving_state.live)
    space = spaces.space(demo.id, serving_state.live.pool(demo.id))
    assert len(space.frontier) < unlabelled  # the rest is not encoded yet
    spaces.encode_all(demo.id)
    assert len(space.frontier) == unlabelled
    said = q.encoding(serving_state.live, demo.handle())
    assert said is not None and said.done and said.encoded == said.rows


def test_a_new_version_orders_in_the_old_space_until_its_own_holds_every_row(
    serving_state, monkeypatch
):
    """Issue 72 item 3: once a new version serves, its labelled rows are in its space at once,
    the unlabelled follow in the background, and meanwhile the queue orders in the space
    before it and says so."""
    from app import worker
    from app.services.models import versions as version_svc
    from app.services.training import retrain_jobs as train_svc
    from app.serving import row_encoding
    from tests.handles import live
    from tests.samples import QUICK, make_tiny

    monkeypatch.setattr(row_encoding, "CHUNK_ROWS", 50)
    make_tiny(serving_state)
    tiny = live(serving_state, "tiny")
    import_utterances(serving_state.db, tiny.handle(), _filler(180))
    spaces = row_encoding.spaces_of(serving_state.live)
    q.order(serving_state.live, tiny.handle())
    spaces.encode_all(tiny.id)
    base = serving_state.live.ordered[tiny.id]
    view, _ = train_svc.request_retrain(serving_state.training, tiny, QUICK, enqueue=False)
    worker.execute_job(serving_state, view.id, anytime=False)
    version = train_svc.job(serving_state.training, view.id).model_version_id
    version_svc.activate(serving_state.factories, tiny.handle(), version)
    before = serving_state.live.cache.encoded
    assert q.order(serving_state.live, tiny.handle())
    assert serving_state.live.cache.encoded - before <= queue_order.ENCODE_ON_KEY
    said = q.encoding(serving_state.live, tiny.handle())
    assert said is not None and "the queue orders in the base encoder's meanwhile" in said.words()
    assert serving_state.live.ordered[tiny.id] is base
    spaces.encode_all(tiny.id)
    q.order(serving_state.live, tiny.handle())
    assert serving_state.live.ordered[tiny.id].model_version_id == version
    said = q.encoding(serving_state.live, tiny.handle())
    assert said is not None and said.words() == ""
