"""The multi-label head of a frozen pool is kept across restarts, and a process never exits with
its fit under way (issue 45 row 6: `intent-studio predict` on a frozen NLU++ banking project
printed every line, then exited 134, "terminate called without an active exception"; and after
each start, until the background head landed, predictions fell back to the k-NN threshold)."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from app.access import open_project
from app.cli import main
from app.config import load_settings
from app.services.models import predict as predict_svc
from app.services.projects.io import destination, import_utterances
from app.serving.state import ServingState
from storage.utterances import NewUtterance

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


def _banking(serving_state, shared_data: Path, n: int) -> list[str]:
    """Project "banking": the first ``n`` NLU++ banking rows as train; 300 other texts."""
    with open(shared_data / "nlupp" / "banking.csv", encoding="utf-8") as fh:
        rows = list({r["text"]: r for r in csv.DictReader(fh)}.values())  # a few texts repeat
    train = [NewUtterance(r["text"], tuple(x for x in r["labels"].split("|") if x)) for r in rows]
    import_utterances(serving_state.db, destination(serving_state.db, "banking"), train[:n])
    return [r["text"] for r in rows[n : n + 300]]


def _decisions(serving_state: ServingState, texts: list[str]) -> list[tuple[str, ...]]:
    out = predict_svc.predict(serving_state.live, open_project(serving_state.db, "banking"), texts)
    return [tuple(r["labels"]) for r in out]


def test_a_restart_serves_the_head_it_had_at_once(serving_state, shared_data):
    held = _banking(serving_state, shared_data, 150)[:60]
    pid = open_project(serving_state.db, "banking").id
    serving_state.live.pool(pid)
    assert serving_state.live.heads.settle(300)
    assert serving_state.live.pool(pid).predictor.head is not None
    before = _decisions(serving_state, held)
    serving_state.close()

    again = ServingState.open(load_settings(serving_state.settings.data_dir))
    try:
        pool = again.live.pool(pid)
        assert pool.predictor.head is not None  # no fallback while a new fit runs
        assert _decisions(again, held) == before
        assert again.live.heads.settle(60)
        assert again.live.pool(pid).predictor.head is pool.predictor.head  # no second fit
    finally:
        again.close()


def _predict(data_dir: Path, texts: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE"}
    args = [sys.executable, "-m", "app", "--data-dir", str(data_dir), "predict"]
    args += ["--project", "banking", "--input", str(texts), "--format", "jsonl"]
    return subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)


def test_predict_exits_0_and_decides_with_the_head(serving_state, shared_data, tmp_path, capsys):
    """The first `predict` of a frozen multi-label project (no head kept yet) fits the head and
    decides with it, exits 0, and keeps the head: the next start decides the same at once (that
    one runs in this process: what it reads is on disk, and the exit code is the first's)."""
    held = _banking(
        serving_state, shared_data, 150
    )  # the issue had 1,500 rows: the same path, shorter
    pool = serving_state.live.pool(
        open_project(serving_state.db, "banking").id
    )  # its vectors encoded and kept, as a
    serving_state.live.heads.close()  # server would, but no head fitted: the fit it asked for is dropped
    serving_state.live.cache.encode(pool.encoder, held)  # both runs read the same vectors
    serving_state.close()
    texts = tmp_path / "held.txt"
    texts.write_text("\n".join(held) + "\n", encoding="utf-8")

    first = _predict(serving_state.settings.data_dir, texts)
    assert first.returncode == 0, first.stderr[-2000:]
    assert "terminate called" not in first.stderr
    lines = [json.loads(line) for line in first.stdout.splitlines()]
    assert len(lines) == len(held)
    assert all(r.get("probabilities") for r in lines)  # the head decided, not the k-NN fallback
    kept = serving_state.settings.data_dir / "cache"
    assert len([p for p in kept.rglob("head.json") if "heads" in p.parts]) == 1

    capsys.readouterr()
    data = str(serving_state.settings.data_dir)
    args = ["--project", "banking", "--input", str(texts), "--format", "jsonl"]
    assert main(["--data-dir", data, "predict", *args]) == 0  # the kept head, from the start
    again = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["labels"] for r in again] == [r["labels"] for r in lines]
    for a, b in zip(again, lines, strict=True):
        assert a["probabilities"] == pytest.approx(b["probabilities"], abs=1e-5)
