"""Faults and hostile input across entry points: two sessions editing one utterance, a full disk
while training or exporting, and odd Unicode in every import format. Each gets a clear message and
changes nothing."""

from __future__ import annotations

import csv
import errno
import json
import os
import unicodedata

import pytest

from app import worker
from app.config import load_settings
from app.formats import FormatError
from app.services.labelling import data as data_svc
from app.services.models.versions import history
from app.services.projects import bundles as bundle_svc
from app.services.projects import export as export_svc
from app.services.projects import io as io_svc
from app.services.projects.io import destination
from app.services.projects.projects import project_names
from app.services.training import retrain_jobs
from app.serving.state import ServingState
from storage.errors import ConflictError
from tests.handles import live
from tests.samples import QUICK, make_tiny


def test_the_second_of_two_sessions_is_told_what_changed(serving_state, demo):
    other = ServingState.open(
        load_settings(serving_state.settings.data_dir)
    )  # another browser, another process
    try:
        row = data_svc.table(serving_state.db, demo, search="where is my order?")[0]
        seen_by_both = int(row["version"])
        labels = row["intents"].split("|") if row["intents"] else None
        data_svc.label_utterance(
            serving_state.db,
            demo,
            row["id"],
            labels,
            text="where is my order??",
            expected_version=seen_by_both,
        )
        with pytest.raises(ConflictError, match=r"changed by someone else .*where is my order\?\?"):
            data_svc.label_utterance(
                other.db,
                demo,
                row["id"],
                labels,
                text="where's my order",
                expected_version=seen_by_both,
            )
        assert data_svc.table(other.db, demo, search="where is my order??")[0]["id"] == row["id"]
    finally:
        other.close()


def _disk_full(*_args, **_kwargs):
    raise OSError(errno.ENOSPC, "No space left on device")


@pytest.mark.slow
def test_a_full_disk_while_saving_a_model_fails_the_job_and_activates_nothing(
    serving_state, monkeypatch
):
    make_tiny(serving_state)
    from core.training.model_io import TrainedModel

    monkeypatch.setattr(TrainedModel, "save", _disk_full)
    job, _ = retrain_jobs.request_retrain(
        serving_state.training, live(serving_state, "tiny"), QUICK, enqueue=False
    )
    worker.execute_job(serving_state, job.id)
    failed = retrain_jobs.job(serving_state.training, job.id)
    assert failed.status == "failed"
    assert "No space left on device" in failed.message
    assert "active model is unchanged" in failed.message
    assert history(serving_state.db, live(serving_state, "tiny")) == []
    assert not list(serving_state.settings.artifacts_dir.rglob("job*"))
    assert not list((serving_state.settings.artifacts_dir / ".tmp").iterdir())


@pytest.mark.slow
def test_a_job_reaped_while_its_worker_was_silent_registers_nothing_when_it_wakes(
    serving_state, monkeypatch
):
    """The worker stalls past the heartbeat limit (a paused VM, a swapped-out process), another
    process reaps its job as failed, then the worker wakes and finishes: its model must not
    become a version, nor the failed job a success."""
    from app.services.training import retrain_serve
    from storage import job_reaper

    make_tiny(serving_state)
    real_gate = retrain_serve.gate

    def reaped_then_gate(*args, **kwargs):
        with serving_state.db.write() as s:  # the reaper, in its own transaction
            assert job_reaper.reap_dead_jobs(s, alive=lambda pid: False) == 1
        return real_gate(*args, **kwargs)

    monkeypatch.setattr(retrain_serve, "gate", reaped_then_gate)
    job, _ = retrain_jobs.request_retrain(
        serving_state.training, live(serving_state, "tiny"), QUICK, enqueue=False
    )
    worker.execute_job(serving_state, job.id)
    ended = retrain_jobs.job(serving_state.training, job.id)
    assert ended.status == "failed"
    assert "stopped unexpectedly" in ended.message
    assert "after the job had ended" in ended.log
    assert history(serving_state.db, live(serving_state, "tiny")) == []
    assert not list(serving_state.settings.artifacts_dir.rglob("job*"))


def test_a_job_looked_at_while_its_worker_writes_its_end_answers_the_job(serving_state, demo):
    """bench/races.py found it on SQLite (issue 64 item 8): a look at a job (the Train tab's
    poll, REST's ``GET …/jobs/{id}``) first reaps the jobs nothing will finish; when the job's
    worker wrote its end between the look's read and its verdict, the look answered "The
    database is busy with another change" (a transaction that read before another writer
    committed cannot write after it). The look now reads with no lock, and takes the write lock
    from its start when it has something to reap: the worker's end wins and the look answers."""
    import threading
    from datetime import timedelta

    from sqlalchemy import event

    from storage import jobs
    from storage.tables import TrainingJob, utcnow

    job, _ = retrain_jobs.request_retrain(serving_state.training, demo, QUICK, enqueue=False)
    with serving_state.db.write() as s:  # running, and silent for a day: the reaper's to fail
        jobs.claim_job(s, job.id, pid=os.getpid())
        s.get(TrainingJob, job.id).heartbeat_at = utcnow() - timedelta(days=1)
    ended = threading.Event()
    REAPERS_LOOK = "SELECT training_jobs.id, training_jobs.worker_pid, training_jobs.heartbeat_at"

    def the_worker_ends() -> None:
        with serving_state.db.write() as s:
            jobs.finish_job(s, job.id, "succeeded", "v1: accuracy 0.9")

    def read_then_the_end(conn, cursor, statement, *args) -> None:
        # the look has read the running jobs (its transaction has its snapshot): the end now
        looked = statement.lstrip().startswith(REAPERS_LOOK)
        if looked and not ended.is_set():
            ended.set()
            end = threading.Thread(target=the_worker_ends)
            end.start()
            end.join(5)

    event.listen(serving_state.db.engine, "after_cursor_execute", read_then_the_end)
    try:
        seen = retrain_jobs.job(serving_state.training, job.id)
    finally:
        event.remove(serving_state.db.engine, "after_cursor_execute", read_then_the_end)
    assert ended.is_set() and (seen.status, seen.message) == ("succeeded", "v1: accuracy 0.9")


def test_a_full_disk_while_exporting_leaves_no_partial_bundle(
    serving_state, demo, tmp_path, monkeypatch
):
    import zipfile

    def write_then_fail(self, *args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(zipfile.ZipFile, "writestr", write_then_fail)
    folder = tmp_path / "exports"
    folder.mkdir()
    with pytest.raises(OSError, match="No space left"):
        bundle_svc.export_bundle(serving_state.live, demo, folder / "demo.zip")
    assert list(folder.iterdir()) == []


ODD = [
    ("\u200f\u0645\u0631\u062d\u0628\u0627 where is my order", True),  # RTL mark + Arabic
    ("refund please 😀🙏", True),  # emoji
    ("caf\u0065\u0301 au lait order", True),  # combining accent: stored as NFC
    ("\u200b\u200b", False),  # zero-width only: empty
    ("\u200e \u2060", False),  # direction mark, word joiner: empty
    ("bad\x00byte", False),  # NUL
]


@pytest.mark.parametrize(("text", "accepted"), ODD)
@pytest.mark.parametrize("fmt", ["csv", "jsonl", "yml"])
def test_odd_unicode_in_every_format(serving_state, tmp_path, fmt, text, accepted):
    path = tmp_path / f"odd.{fmt}"
    if fmt == "csv":
        with path.open("w", encoding="utf-8", newline="") as fh:
            csv.writer(fh).writerows([["text", "label"], [text, "greeting"]])
    elif fmt == "jsonl":
        line = json.dumps({"text": text, "label": "greeting"}, ensure_ascii=False)
        path.write_text(line + "\n", encoding="utf-8")
    else:
        path.write_text(
            f'version: "3.1"\nnlu:\n- intent: greeting\n  examples: |\n    - {text}\n',
            encoding="utf-8",
        )
    if accepted:
        result = io_svc.import_file(serving_state.db, destination(serving_state.db, "odd"), path)
        assert result.inserted == 1
        # stored NFC (issue 27 row 7): the combining accent is composed into one character
        assert export_svc.export_rows(serving_state.db, live(serving_state, "odd"))[
            0
        ].text == unicodedata.normalize("NFC", text.strip())
    else:
        with pytest.raises(FormatError, match="Nothing was imported"):
            io_svc.import_file(serving_state.db, destination(serving_state.db, "odd"), path)
        assert "odd" not in project_names(serving_state.db)  # not even the project was created


def test_a_save_that_fails_on_its_labels_keeps_the_old_text_too(serving_state, demo):
    row = data_svc.table(serving_state.db, demo, search="where is my order?")[0]
    with pytest.raises(ValueError):
        data_svc.label_utterance(
            serving_state.db,
            demo,
            row["id"],
            ["track_order"],
            split="nowhere",
            text="edited text",
            expected_version=int(row["version"]),
        )
    assert (
        data_svc.table(serving_state.db, demo, search="where is my order?")[0]["text"]
        == row["text"]
    )
    saved = data_svc.label_utterance(
        serving_state.db,
        demo,
        row["id"],
        ["track_order", "cancel_order"],
        split="test",
        text="edited text",
        expected_version=int(row["version"]),
    )
    assert (saved["text"], saved["labels"], saved["split"]) == (
        "edited text",
        ("cancel_order", "track_order"),
        "test",
    )
