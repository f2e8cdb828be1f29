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


def _project(serving_state, n: int) -> list[int]:
    """Project "big": a labelled seed and ``n`` unlabelled rows; the ids of those."""
    rows = [NewUtterance(f"utterance {i}", (), "unlabelled") for i in range(n)]
    import_utterances(
        serving_state.db,
        destination(serving_state.db, "big"),
        [NewUtterance("seed", ("seed",)), *rows],
    )
    return [r["id"] for r in _table(serving_state) if r["split"] == "unlabelled"]


def _table(serving_state) -> list[dict]:
    return data_svc.table(serving_state.db, live(serving_state, "big"), limit=100_000)


def _state(serving_state) -> dict[int, tuple[str, str]]:
    return {r["id"]: (r["intents"], r["split"]) for r in _table(serving_state)}


@pytest.fixture
def small_chunks(monkeypatch):
    monkeypatch.setattr(bulk_svc, "CHUNK_ROWS", 3)
    monkeypatch.setattr(bulk_svc, "CHUNK_PAUSE_S", 0.0)
    monkeypatch.setattr(history, "UNDO_CHUNK", 3)
    monkeypatch.setattr(history, "UNDO_PAUSE_S", 0.0)


def _after_each_write(serving_state, then=None) -> list[int]:
    """Count ``serving_state.db.write()`` transactions; after the n-th commits, call ``then(n)``."""
    original = serving_state.db.write
    writes: list[int] = []

    @contextmanager
    def write(*lock):
        with original(*lock) as s:
            yield s
        writes.append(1)
        if then is not None:
            serving_state.db.write = original  # the other person's save is a transaction of its own
            try:
                then(len(writes))
            finally:
                serving_state.db.write = write

    serving_state.db.write = write
    return writes


def test_a_long_bulk_label_is_written_in_chunks_and_undone_as_one_batch(
    serving_state, small_chunks
):
    ids = _project(serving_state, 10)
    before = _state(serving_state)
    plan = bulk_svc.plan_label(
        serving_state.db, live(serving_state, "big"), ids, ["greet"], create=True
    )
    writes = _after_each_write(serving_state)
    done = bulk_svc.label_many(
        serving_state.db, live(serving_state, "big"), ids, ["greet"], token=plan.token, create=True
    )
    assert len(writes) == 4  # 3 + 3 + 3 + 1 rows, each its own transaction
    assert sorted(done.change) == sorted(ids) and done.meanwhile == ()
    assert all(_state(serving_state)[i] == ("greet", "train") for i in ids)
    batches = [
        a
        for a in history.activity(serving_state.db, live(serving_state, "big"))
        if a["action"] == "label"
    ]
    assert [(a["batch"], a["rows"]) for a in batches] == [(done.batch, 10)]  # one batch

    writes.clear()
    assert (
        history.undo(serving_state.db, live(serving_state, "big"))
        == "Undid label of 10 utterance(s)."
    )
    assert len(writes) == 4  # the undo too: 3 + 3 + 3 + 1 events
    assert _state(serving_state) == before
    assert "greet" not in data_svc.intent_names(
        serving_state.db, live(serving_state, "big")
    )  # made by the batch
    undone = next(
        a
        for a in history.activity(serving_state.db, live(serving_state, "big"))
        if a["batch"] == done.batch
    )
    assert undone["state"] == "undone"


def test_a_save_between_two_chunks_is_kept_and_named(serving_state, small_chunks):
    """Someone labels a row of the selection after the first chunk is in: the bulk label leaves
    it as they set it, says so, and its Undo leaves that save alone."""
    ids = _project(serving_state, 10)
    plan = bulk_svc.plan_label(
        serving_state.db, live(serving_state, "big"), ids, ["greet"], create=True
    )
    late = ids[7]

    def someone_saves(n: int) -> None:
        if n == 1:
            data_svc.label_utterance(
                serving_state.db, live(serving_state, "big"), late, ["cancel"], create=True
            )

    _after_each_write(serving_state, someone_saves)
    done = bulk_svc.label_many(
        serving_state.db, live(serving_state, "big"), ids, ["greet"], token=plan.token, create=True
    )
    assert done.meanwhile == (late,) and late not in done.change and len(done.change) == 9
    assert "1 changed by someone else while this was applied" in done.summary()
    assert _state(serving_state)[late] == ("cancel", "train")
    assert all(_state(serving_state)[i] == ("greet", "train") for i in ids if i != late)

    history.undo_batch(serving_state.db, live(serving_state, "big"), done.batch)
    assert _state(serving_state)[late] == ("cancel", "train")  # the other save stays
    assert all(_state(serving_state)[i] == ("", "unlabelled") for i in ids if i != late)


def test_the_preview_is_checked_before_the_first_chunk(serving_state, small_chunks):
    """A long bulk label still applies exactly the preview: a row labelled after the preview
    refuses it, and nothing is written."""
    ids = _project(serving_state, 10)
    plan = bulk_svc.plan_label(
        serving_state.db, live(serving_state, "big"), ids, ["greet"], create=True
    )
    data_svc.label_utterance(
        serving_state.db, live(serving_state, "big"), ids[9], ["cancel"], create=True
    )
    before = _state(serving_state)
    with pytest.raises(bulk_svc.StalePreview, match="Nothing was changed"):
        bulk_svc.label_many(
            serving_state.db,
            live(serving_state, "big"),
            ids,
            ["greet"],
            token=plan.token,
            create=True,
        )
    assert _state(serving_state) == before


def test_an_undo_stopped_half_way_is_finished_by_undoing_it_again(serving_state, small_chunks):
    """The database stays busy after the undo's first chunk (or the process dies): each row is
    back or as it was, the message says how far it got, and the same undo again takes back the
    rest."""
    ids = _project(serving_state, 10)
    before = _state(serving_state)
    done = bulk_svc.label_many(
        serving_state.db, live(serving_state, "big"), ids, ["greet"], create=True
    )

    original = serving_state.db.write
    writes: list[int] = []

    @contextmanager
    def write(*lock):
        writes.append(1)
        if len(writes) == 2:  # the undo's second transaction
            raise BusyError("The database is busy with another change.")
        with original(*lock) as s:
            yield s

    serving_state.db.write = write
    with pytest.raises(BusyError, match="stopped after 3 of 10 change"):
        history.undo_batch(serving_state.db, live(serving_state, "big"), done.batch)
    half = _state(serving_state)
    assert sum(half[i] == before[i] for i in ids) == 3
    assert sum(half[i] == ("greet", "train") for i in ids) == 7
    serving_state.db.write = original
    assert history.undo_batch(serving_state.db, live(serving_state, "big"), done.batch) == (
        "Undid label of 7 utterance(s)."
    )
    assert _state(serving_state) == before


@pytest.mark.slow
def test_labelling_goes_on_while_a_long_bulk_label_runs(serving_state):
    """The real chunk size: a bulk label of four chunks in one thread; while it holds the write
    lock, a designer's save in another project. The save lands once a chunk is in, before the
    bulk label ends, instead of waiting for all of it (or failing busy after the timeout, as a
    one-transaction bulk label did)."""
    import_utterances(
        serving_state.db,
        destination(serving_state.db, "other"),
        [NewUtterance("hello", ("greet",))],
    )
    uid = data_svc.table(serving_state.db, live(serving_state, "other"))[0]["id"]
    ids = _project(serving_state, 4 * bulk_svc.CHUNK_ROWS)
    plan = bulk_svc.plan_label(
        serving_state.db, live(serving_state, "big"), ids, ["t"], create=True
    )
    locked = threading.Event()
    original = serving_state.db.write

    @contextmanager
    def write(*lock):
        with original(*lock) as s:
            if threading.current_thread() is labeller:
                s.connection()  # BEGIN IMMEDIATE: the bulk label holds the write lock from here
                locked.set()
            yield s

    serving_state.db.write = write
    done: dict[str, object] = {}

    def run() -> None:
        try:
            done["plan"] = bulk_svc.label_many(
                serving_state.db,
                live(serving_state, "big"),
                ids,
                ["t"],
                token=plan.token,
                create=True,
            )
        except BaseException as exc:  # shown by the assertion below
            done["error"] = exc
        done["at"] = time.monotonic()

    labeller = threading.Thread(target=run)
    labeller.start()
    try:
        assert locked.wait(120)
        row = data_svc.label_utterance(
            serving_state.db, live(serving_state, "other"), uid, "bye", create=True
        )
        saved_at = time.monotonic()
    finally:
        labeller.join()
    assert "error" not in done, done.get("error")
    assert row["labels"] == ("bye",)
    assert saved_at < done["at"]  # type: ignore[operator]
    assert len(done["plan"].change) == len(ids)  # type: ignore[attr-defined]
