"""The background encoding of every row (issue 72 items 2 and 5), with real SQLite, the real
encoder, the real embedding cache and the real training queue: a kill -9 in the middle resumes
without encoding again what its chunks wrote, a restart reads the row index back instead of
building it, and a team's workers encode the chunks a server hands out through the queue."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from app.config import load_settings
from app.services.projects.io import import_utterances
from app.services.queue import queue as q
from app.serving import row_encoding
from app.serving.row_encoding import spaces_of
from app.serving.state import ServingState
from core.encoding.cache import read_shard
from storage.utterances import NewUtterance

ROOT = Path(__file__).resolve().parents[2]

# The background of a server, alone in a process: chunks of 20 rows, each said when done.
CHILD = """
import sys
from app.config import load_settings
from app.serving import row_encoding
from app.serving.state import ServingState

row_encoding.CHUNK_ROWS = 20
state = ServingState.open(load_settings(sys.argv[1]))
spaces = row_encoding.spaces_of(state.live)
pid = int(sys.argv[2])
while spaces.step(pid):
    print("encoded", state.live.cache.encoded, flush=True)
print("done", flush=True)
"""


def _rows(n: int) -> list[NewUtterance]:
    return [
        NewUtterance(
            f"customer message {i}: my parcel {i % 17} is late again, order AC-{9000 + i}",
            (),
            "unlabelled",
        )
        for i in range(n)
    ]


def _keys_on_disk(folder: Path) -> set[str]:
    keys: set[str] = set()
    for shard in folder.glob("shard-*.npz"):
        keys.update(read_shard(shard)[0])
    return keys


def test_a_kill_9_during_the_background_encoding_resumes_without_encoding_again(
    serving_state, demo
):
    import_utterances(serving_state.db, demo, _rows(240))
    pool = serving_state.live.pool(demo.id)  # the labelled pool, encoded here
    data = serving_state.settings.data_dir
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(data), str(demo.id)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        assert child.stdout is not None
        chunks = 0
        for line in child.stdout:  # a few chunks written, then killed in the middle
            chunks += line.startswith("encoded")
            if chunks >= 4:
                break
        child.send_signal(signal.SIGKILL)
        child.wait(30)
    finally:
        if child.poll() is None:
            child.kill()
    assert child.returncode == -signal.SIGKILL
    folder = serving_state.live.cache.folder(pool.encoder.fingerprint)
    assert folder is not None
    written = _keys_on_disk(folder)
    again = ServingState.open(load_settings(data))
    try:
        spaces = spaces_of(again.live)
        rows = spaces.rows(demo.id, full=True)
        every = {rows.key_of(i, False) for i in rows.split}
        assert 0 < len(written & every) < len(every)  # stopped half-way
        spaces.encode_all(demo.id)
        space = spaces.space(demo.id, again.live.pool(demo.id))
        assert len(space) == len(rows)  # every row encoded in the end
        assert again.live.cache.encoded == len(every - written)  # none of the written again
    finally:
        again.close()


def test_a_restart_reads_the_row_index_back_and_encodes_nothing(serving_state, demo):
    import_utterances(serving_state.db, demo, _rows(120))
    spaces = spaces_of(serving_state.live)
    q.order(serving_state.live, demo.handle())
    spaces.encode_all(demo.id)
    spaces.close()  # kept on disk
    rows = len(spaces.rows(demo.id))
    again = ServingState.open(load_settings(serving_state.settings.data_dir))
    try:
        again_spaces = spaces_of(again.live)
        again_spaces.fan_out = None
        q.warm_up(again.live)  # what serve's warm-up does; starts the background
        again_spaces.close()
        space = again_spaces.space(demo.id, again.live.pool(demo.id))
        assert len(space) == rows and space.index.kind == "flat"
        assert len(space.frontier) == q.remaining(again.db, demo)
        assert again.live.cache.encoded == 0  # read back, nothing encoded again
        assert q.order(again.live, demo.handle())
        assert again.live.cache.encoded == 0
    finally:
        again.close()


def test_a_teams_workers_encode_the_chunks_the_server_hands_out_through_the_queue(
    serving_state, demo, monkeypatch
):
    """The server's background sends its chunks to the training queue (a team's: here the
    SQLite one, the same Huey code) and adds what the workers wrote to the shared cache; the
    server encodes none of them itself."""
    from app.worker import make_queue
    from app.worker.encoding import encode_rows, sender

    monkeypatch.setattr(row_encoding, "CHUNK_ROWS", 40)
    import_utterances(serving_state.db, demo, _rows(150))
    spaces = spaces_of(serving_state.live)
    spaces.fan_out = sender(serving_state.settings)
    serving_state.live.pool(demo.id)
    before = serving_state.live.cache.encoded
    assert spaces.step(demo.id)  # chunks out with the workers
    huey, _ = make_queue(serving_state.settings)
    worker = ServingState.open(load_settings(serving_state.settings.data_dir))  # a worker's process
    try:
        done = 0
        while (task := huey.dequeue()) is not None:
            assert task.name == "encode_rows"
            done += encode_rows(worker, *task.args)
        assert done >= 150
        deadline = time.monotonic() + 60
        while spaces.step(demo.id) and time.monotonic() < deadline:
            while (task := huey.dequeue()) is not None:
                encode_rows(worker, *task.args)
        rows = spaces.rows(demo.id)
        space = spaces.space(demo.id, serving_state.live.pool(demo.id))
        assert len(space) == len(rows)
        assert (
            serving_state.live.cache.encoded - before <= 1
        )  # the workers encoded them, not the server
        said = q.encoding(serving_state.live, demo.handle())
        assert said is not None and said.done
    finally:
        worker.close()
