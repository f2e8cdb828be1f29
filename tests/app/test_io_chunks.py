"""A long import is written in chunks, so that labelling goes on meanwhile; it is still checked
whole before anything is written, and it is still one batch in the audit log."""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager

import pytest

from app.services.labelling import data as data_svc
from app.services.labelling import history
from app.services.projects import io as io_svc
from app.services.projects.io import destination
from storage.errors import StorageError
from storage.utterances import NewUtterance
from tests.handles import live


def _rows(n: int, prefix: str = "row", intents: int = 4) -> list[NewUtterance]:
    return [NewUtterance(f"{prefix} {i}", (f"intent_{i % intents}",)) for i in range(n)]


@pytest.fixture
def small_chunks(monkeypatch):
    monkeypatch.setattr(io_svc, "CHUNK_ROWS", 3)
    monkeypatch.setattr(io_svc, "CHUNK_PAUSE_S", 0.0)


def _count_writes(serving_state) -> list[int]:
    """Count serving_state.db.write() transactions."""
    writes: list[int] = []
    original = serving_state.db.write

    @contextmanager
    def write(*lock):
        writes.append(1)
        with original(*lock) as s:
            yield s

    serving_state.db.write = write
    return writes


def _batches(serving_state, project: str) -> dict[str, set[str]]:
    """The batch ids of a project's audit events, by action."""
    from storage.audit import recent_events
    from storage.projects import get_project

    by_action: dict[str, set[str]] = {}
    with serving_state.db.session() as s:
        for e in recent_events(s, get_project(s, str(project)).id, limit=10_000):
            by_action.setdefault(e.action, set()).add(e.batch)
    return by_action


def test_a_long_import_is_written_in_chunks_as_one_batch(serving_state, small_chunks):
    writes = _count_writes(serving_state)
    result = io_svc.import_utterances(
        serving_state.db, destination(serving_state.db, "p"), _rows(10)
    )
    assert len(writes) == 4  # 3 + 3 + 3 + 1 rows
    assert (result.inserted, result.updated, result.skipped) == (10, 0, 0)
    assert result.intents_created == [f"intent_{i}" for i in range(4)]
    assert len(data_svc.table(serving_state.db, live(serving_state, "p"))) == 10
    assert len(_batches(serving_state, "p")["import"]) == 1


def test_a_relabel_in_chunks_is_undone_as_one(serving_state, small_chunks):
    io_svc.import_utterances(serving_state.db, destination(serving_state.db, "p"), _rows(10))
    moved = [NewUtterance(f"row {i}", ("other",)) for i in range(8)]
    result = io_svc.import_utterances(
        serving_state.db,
        destination(serving_state.db, "p"),
        moved + _rows(2, "new"),
        on_existing="relabel",
    )
    assert (result.inserted, result.updated, result.intents_created) == (2, 8, ["other"])
    rows = {r["text"]: r for r in data_svc.table(serving_state.db, live(serving_state, "p"))}
    assert all(rows[f"row {i}"]["intents"] == "other" for i in range(8))
    batches = _batches(serving_state, "p")
    assert len(batches["label"]) == 1  # three chunks, one batch

    history.undo(serving_state.db, live(serving_state, "p"))
    rows = {r["text"]: r for r in data_svc.table(serving_state.db, live(serving_state, "p"))}
    assert [rows[f"row {i}"]["intents"] for i in range(10)] == [
        f"intent_{i % 4}" for i in range(10)
    ]
    assert {rows[f"row {i}"]["split"] for i in range(10)} == {"train"}


def test_skipped_rows_are_counted_across_chunks(serving_state, small_chunks):
    io_svc.import_utterances(serving_state.db, destination(serving_state.db, "p"), _rows(5))
    again = io_svc.import_utterances(
        serving_state.db, destination(serving_state.db, "p"), _rows(10)
    )
    assert (again.inserted, again.updated, again.skipped) == (5, 0, 5)


BAD_LAST_ROW = {
    "appears twice": (NewUtterance("row 0", ("intent_0",)), {}),
    "not intents of this project": (
        NewUtterance("late", ("unknown",)),
        {"create_missing_intents": False},
    ),
    "cannot contain": (NewUtterance("late", ("a|b",)), {}),
}


@pytest.mark.parametrize("problem", sorted(BAD_LAST_ROW))
def test_a_problem_in_the_last_chunk_refuses_the_whole_import(serving_state, small_chunks, problem):
    io_svc.import_utterances(
        serving_state.db, destination(serving_state.db, "p"), [NewUtterance("seed", ("intent_0",))]
    )
    bad, kwargs = BAD_LAST_ROW[problem]
    writes = _count_writes(serving_state)
    with pytest.raises(StorageError, match=problem):
        io_svc.import_utterances(
            serving_state.db, destination(serving_state.db, "p"), [*_rows(10), bad], **kwargs
        )
    with pytest.raises(StorageError, match=problem):
        io_svc.import_utterances(
            serving_state.db, destination(serving_state.db, "fresh"), [*_rows(10), bad], **kwargs
        )
    assert writes == []  # refused before any write transaction began
    assert [r["text"] for r in data_svc.table(serving_state.db, live(serving_state, "p"))] == [
        "seed"
    ]
    with pytest.raises(StorageError, match="No project 'fresh'"):
        data_svc.table(serving_state.db, live(serving_state, "fresh"))


@pytest.mark.slow
def test_labelling_goes_on_while_a_long_import_runs(serving_state):
    """A real import (the real chunk size) in one thread; while it holds the write lock, a
    designer's label save in another. The save succeeds once the import's first chunk is in,
    with most of the import still to come, instead of waiting for all of it (or failing with
    'busy' after the timeout, as a one-transaction import did)."""
    io_svc.import_utterances(
        serving_state.db,
        destination(serving_state.db, "other"),
        [NewUtterance("where is my parcel", ("track",))],
    )
    uid = data_svc.table(serving_state.db, live(serving_state, "other"))[0]["id"]
    rows = _rows(8 * io_svc.CHUNK_ROWS, intents=80)
    locked = threading.Event()
    original = serving_state.db.write

    @contextmanager
    def write(*lock):
        with original(*lock) as s:
            if threading.current_thread() is importer:
                s.connection()  # BEGIN IMMEDIATE: the import holds the write lock from here
                locked.set()
            yield s

    serving_state.db.write = write
    done: dict[str, object] = {}

    def run_import() -> None:
        try:
            done["result"] = io_svc.import_utterances(
                serving_state.db, destination(serving_state.db, "big"), rows
            )
        except BaseException as exc:  # shown by the assertion below
            done["error"] = exc
        done["at"] = time.monotonic()

    importer = threading.Thread(target=run_import)
    importer.start()
    try:
        assert locked.wait(120)
        row = data_svc.label_utterance(
            serving_state.db, live(serving_state, "other"), uid, "refund", create=True
        )
        labelled_at = time.monotonic()
        imported_by_then = len(
            data_svc.table(serving_state.db, live(serving_state, "big"), limit=len(rows))
        )
    finally:
        importer.join()
    assert "error" not in done, done.get("error")
    assert row["labels"] == ("refund",)
    assert imported_by_then < len(rows)  # it did not wait for the whole import
    assert labelled_at < done["at"]  # saved while the import was still going on
    assert done["result"].inserted == len(rows)  # type: ignore[attr-defined]


def test_a_change_between_two_chunks_stops_the_import_with_a_clear_message(
    serving_state, small_chunks
):
    """Someone adds a text of the import after it was checked: the chunk with it is refused
    (on_existing="error"), the chunks before it stay, and the message says so."""
    io_svc.import_utterances(
        serving_state.db, destination(serving_state.db, "p"), [NewUtterance("seed", ("intent_0",))]
    )
    original = serving_state.db.write
    chunks: list[int] = []

    @contextmanager
    def write(*lock):
        with original(*lock) as s:
            yield s
        chunks.append(1)
        if len(chunks) == 1:  # the first chunk is in: someone else saves "row 7"
            serving_state.db.write = original
            data_svc.add_utterance(
                serving_state.db, live(serving_state, "p"), "row 7", "intent_3", create=True
            )
            serving_state.db.write = write

    serving_state.db.write = write
    with pytest.raises(StorageError, match=r"already in this project.*stopped after 6 of 10 row"):
        io_svc.import_utterances(
            serving_state.db, destination(serving_state.db, "p"), _rows(10), on_existing="error"
        )
    texts = {r["text"] for r in data_svc.table(serving_state.db, live(serving_state, "p"))}
    assert texts == {"seed", "row 7"} | {f"row {i}" for i in range(6)}  # chunks 1 and 2
