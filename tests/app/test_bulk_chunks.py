"""A long bulk label, and its undo, are written in short transactions (issue 45 row 5: one
10,000-row bulk label held SQLite's write lock for about 77 s, every other save waited, then
failed "database is busy"). It still applies exactly the preview the user saw, is still one batch
that one Undo takes back, and a save that comes between two of its transactions is kept."""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager

import pytest

from app.services.labelling import bulk as bulk_svc
from app.services.labelling import data as data_svc
from app.services.labelling import history
from app.services.projects.io import destination, import_utterances
from storage.errors import BusyError
from storage.utterances import NewUtterance
from tests.handles import live


def _project(ctx, n: int) -> list[int]:
    """Project "big": a labelled seed and ``n`` unlabelled rows; the ids of those."""
    rows = [NewUtterance(f"utterance {i}", (), "unlabelled") for i in range(n)]
    import_utterances(ctx.db, destination(ctx.db, "big"), [NewUtterance("seed", ("seed",)), *rows])
    return [r["id"] for r in _table(ctx) if r["split"] == "unlabelled"]


def _table(ctx) -> list[dict]:
    return data_svc.table(ctx.db, live(ctx, "big"), limit=100_000)


def _state(ctx) -> dict[int, tuple[str, str]]:
    return {r["id"]: (r["intents"], r["split"]) for r in _table(ctx)}


@pytest.fixture
def small_chunks(monkeypatch):
    monkeypatch.setattr(bulk_svc, "CHUNK_ROWS", 3)
    monkeypatch.setattr(bulk_svc, "CHUNK_PAUSE_S", 0.0)
    monkeypatch.setattr(history, "UNDO_CHUNK", 3)
    monkeypatch.setattr(history, "UNDO_PAUSE_S", 0.0)


def _after_each_write(ctx, then=None) -> list[int]:
    """Count ``ctx.db.write()`` transactions; after the n-th commits, call ``then(n)``."""
    original = ctx.db.write
    writes: list[int] = []

    @contextmanager
    def write(*lock):
        with original(*lock) as s:
            yield s
        writes.append(1)
        if then is not None:
            ctx.db.write = original  # the other person's save is a transaction of its own
            try:
                then(len(writes))
            finally:
                ctx.db.write = write

    ctx.db.write = write
    return writes


def test_a_long_bulk_label_is_written_in_chunks_and_undone_as_one_batch(ctx, small_chunks):
    ids = _project(ctx, 10)
    before = _state(ctx)
    plan = bulk_svc.plan_label(ctx.db, live(ctx, "big"), ids, ["greet"], create=True)
    writes = _after_each_write(ctx)
    done = bulk_svc.label_many(
        ctx.db, live(ctx, "big"), ids, ["greet"], token=plan.token, create=True
    )
    assert len(writes) == 4  # 3 + 3 + 3 + 1 rows, each its own transaction
    assert sorted(done.change) == sorted(ids) and done.meanwhile == ()
    assert all(_state(ctx)[i] == ("greet", "train") for i in ids)
    batches = [a for a in history.activity(ctx.db, live(ctx, "big")) if a["action"] == "label"]
    assert [(a["batch"], a["rows"]) for a in batches] == [(done.batch, 10)]  # one batch

    writes.clear()
    assert history.undo(ctx.db, live(ctx, "big")) == "Undid label of 10 utterance(s)."
    assert len(writes) == 4  # the undo too: 3 + 3 + 3 + 1 events
    assert _state(ctx) == before
    assert "greet" not in data_svc.intent_names(ctx.db, live(ctx, "big"))  # made by the batch
    undone = next(a for a in history.activity(ctx.db, live(ctx, "big")) if a["batch"] == done.batch)
    assert undone["state"] == "undone"


def test_a_save_between_two_chunks_is_kept_and_named(ctx, small_chunks):
    """Someone labels a row of the selection after the first chunk is in: the bulk label leaves
    it as they set it, says so, and its Undo leaves that save alone."""
    ids = _project(ctx, 10)
    plan = bulk_svc.plan_label(ctx.db, live(ctx, "big"), ids, ["greet"], create=True)
    late = ids[7]

    def someone_saves(n: int) -> None:
        if n == 1:
            data_svc.label_utterance(ctx.db, live(ctx, "big"), late, ["cancel"], create=True)

    _after_each_write(ctx, someone_saves)
    done = bulk_svc.label_many(
        ctx.db, live(ctx, "big"), ids, ["greet"], token=plan.token, create=True
    )
    assert done.meanwhile == (late,) and late not in done.change and len(done.change) == 9
    assert "1 changed by someone else while this was applied" in done.summary()
    assert _state(ctx)[late] == ("cancel", "train")
    assert all(_state(ctx)[i] == ("greet", "train") for i in ids if i != late)

    history.undo_batch(ctx.db, live(ctx, "big"), done.batch)
    assert _state(ctx)[late] == ("cancel", "train")  # the other save stays
    assert all(_state(ctx)[i] == ("", "unlabelled") for i in ids if i != late)


def test_the_preview_is_checked_before_the_first_chunk(ctx, small_chunks):
    """A long bulk label still applies exactly the preview: a row labelled after the preview
    refuses it, and nothing is written."""
    ids = _project(ctx, 10)
    plan = bulk_svc.plan_label(ctx.db, live(ctx, "big"), ids, ["greet"], create=True)
    data_svc.label_utterance(ctx.db, live(ctx, "big"), ids[9], ["cancel"], create=True)
    before = _state(ctx)
    with pytest.raises(bulk_svc.StalePreview, match="Nothing was changed"):
        bulk_svc.label_many(ctx.db, live(ctx, "big"), ids, ["greet"], token=plan.token, create=True)
    assert _state(ctx) == before


def test_an_undo_stopped_half_way_is_finished_by_undoing_it_again(ctx, small_chunks):
    """The database stays busy after the undo's first chunk (or the process dies): each row is
    back or as it was, the message says how far it got, and the same undo again takes back the
    rest."""
    ids = _project(ctx, 10)
    before = _state(ctx)
    done = bulk_svc.label_many(ctx.db, live(ctx, "big"), ids, ["greet"], create=True)

    original = ctx.db.write
    writes: list[int] = []

    @contextmanager
    def write(*lock):
        writes.append(1)
        if len(writes) == 2:  # the undo's second transaction
            raise BusyError("The database is busy with another change.")
        with original(*lock) as s:
            yield s

    ctx.db.write = write
    with pytest.raises(BusyError, match="stopped after 3 of 10 change"):
        history.undo_batch(ctx.db, live(ctx, "big"), done.batch)
    half = _state(ctx)
    assert sum(half[i] == before[i] for i in ids) == 3
    assert sum(half[i] == ("greet", "train") for i in ids) == 7
    ctx.db.write = original
    assert history.undo_batch(ctx.db, live(ctx, "big"), done.batch) == (
        "Undid label of 7 utterance(s)."
    )
    assert _state(ctx) == before


@pytest.mark.slow
def test_labelling_goes_on_while_a_long_bulk_label_runs(ctx):
    """The real chunk size: a bulk label of four chunks in one thread; while it holds the write
    lock, a designer's save in another project. The save lands once a chunk is in, before the
    bulk label ends, instead of waiting for all of it (or failing busy after the timeout, as a
    one-transaction bulk label did)."""
    import_utterances(ctx.db, destination(ctx.db, "other"), [NewUtterance("hello", ("greet",))])
    uid = data_svc.table(ctx.db, live(ctx, "other"))[0]["id"]
    ids = _project(ctx, 4 * bulk_svc.CHUNK_ROWS)
    plan = bulk_svc.plan_label(ctx.db, live(ctx, "big"), ids, ["t"], create=True)
    locked = threading.Event()
    original = ctx.db.write

    @contextmanager
    def write(*lock):
        with original(*lock) as s:
            if threading.current_thread() is labeller:
                s.connection()  # BEGIN IMMEDIATE: the bulk label holds the write lock from here
                locked.set()
            yield s

    ctx.db.write = write
    done: dict[str, object] = {}

    def run() -> None:
        try:
            done["plan"] = bulk_svc.label_many(
                ctx.db, live(ctx, "big"), ids, ["t"], token=plan.token, create=True
            )
        except BaseException as exc:  # shown by the assertion below
            done["error"] = exc
        done["at"] = time.monotonic()

    labeller = threading.Thread(target=run)
    labeller.start()
    try:
        assert locked.wait(120)
        row = data_svc.label_utterance(ctx.db, live(ctx, "other"), uid, "bye", create=True)
        saved_at = time.monotonic()
    finally:
        labeller.join()
    assert "error" not in done, done.get("error")
    assert row["labels"] == ("bye",)
    assert saved_at < done["at"]  # type: ignore[operator]
    assert len(done["plan"].change) == len(ids)  # type: ignore[attr-defined]
