"""Benchmark: ConvFiT Stage 2's training speed (issue 44), steps/s, checkouts taking turns.

The paper's recipe as ``bench/train.py`` runs it (``TrainConfig(method="convfit", loss="ocl",
negatives=3)``: online contrastive loss, 3 negatives per positive, 10 epochs at 10 shots) on
BANKING77 10-shot seed 0 from ``../shared/data``, trained by :func:`core.training.train_encoder`
in a fresh process per checkout and stopped after ``--seconds`` through its own ``should_cancel``
(the whole stage at 10 epochs is thousands of steps). Measured per run:

* ``setup``: from the call to the first step done (model load, pair sampling, tokenising);
* ``steps/s``: steps between the first step after ``--warmup`` seconds of training and the
  last one, over the time between them; on CUDA the device is waited for at both ends, so the
  steps queued ahead of it are not counted as done;
* ``projected``: the setup plus the planned steps at that rate, the stage's wall time;
* ``zero loss``: the share of every 25th step's loss that was 0 (the new loop reads the loss
  every 25 steps on CUDA: a sample, the same steps for every checkout).

Usage:
    python -m bench.convfit_speed --code /tmp/peer --code . --device cuda --seconds 60
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

# Runs in the measured process (any checkout): the recipe, timed through its progress callback.
CHILD = r"""
import csv, json, os, sys, time
import torch
from core.training import TrainConfig, TrainingCancelled, train_encoder

seconds, warmup = float(os.environ["CF_SECONDS"]), float(os.environ["CF_WARMUP"])
device = os.environ["CF_DEVICE"]
with open(os.environ["CF_TRAIN"], newline="", encoding="utf-8") as f:
    rows = list(csv.DictReader(f))
texts, labels = [r["text"] for r in rows], [(r["label"],) for r in rows]
cuda = device.startswith("cuda")

def sync():
    if cuda:
        torch.cuda.synchronize()

state = {"first": None, "mark": None, "last": None, "total": None, "losses": []}
t0 = time.perf_counter()

def progress(p):
    now = time.perf_counter()
    state["total"] = p.total
    state["last"] = (p.step, now)
    if p.step % 25 == 0:  # the steps whose loss both loops have just read
        state["losses"].append((p.loss, p.step))
    if state["first"] is None:
        sync()
        state["first"] = (p.step, time.perf_counter())
    elif state["mark"] is None and now - state["first"][1] >= warmup:
        sync()
        state["mark"] = (p.step, time.perf_counter())

def cancel():
    return state["first"] is not None and time.perf_counter() - state["first"][1] >= seconds

config = TrainConfig(method="convfit", loss="ocl", negatives=3, seed=int(os.environ["CF_SEED"]))
stopped = False
try:
    train_encoder("minilm", texts, labels, config, progress=progress, should_cancel=cancel,
                  device=device)
except TrainingCancelled:
    stopped = True
sync()
end = time.perf_counter()
step_end = state["last"][0]
mark = state["mark"] if state["mark"] and state["mark"][0] < step_end else state["first"]
rate = (step_end - mark[0]) / (end - mark[1]) if step_end > mark[0] else float("nan")
setup = state["first"][1] - t0
read = [loss for loss, _ in state["losses"] if loss == loss]
print(json.dumps({
    "device": device, "gpu": torch.cuda.get_device_name(0) if cuda else None,
    "torch": torch.__version__, "planned_steps": state["total"], "steps_done": step_end,
    "stopped": stopped, "setup_s": round(setup, 2), "steps_per_s": round(rate, 2),
    "projected_s": round(setup + state["total"] / rate, 1),
    "zero_loss_share": round(sum(v == 0.0 for v in read) / max(1, len(read)), 3),
    "losses_read": len(read),
}), flush=True)
"""


def revision(code: Path) -> str:
    marker = code / ".bench-commit"
    if marker.is_file():
        return marker.read_text().strip()
    from bench.first_click import revision as git_revision

    return git_revision(code)


def run(code: Path, args: argparse.Namespace) -> dict[str, Any]:
    env = {
        **os.environ,
        "PYTHONPATH": str(code),
        "TOKENIZERS_PARALLELISM": "false",
        "CF_SECONDS": str(args.seconds),
        "CF_WARMUP": str(args.warmup),
        "CF_DEVICE": args.device,
        "CF_SEED": str(args.seed),
        "CF_TRAIN": str(args.data / "banking77" / f"train_10shot_seed{args.seed}.csv"),
    }
    try:
        done = subprocess.run(
            [sys.executable, "-c", CHILD],
            cwd=code,
            env=env,
            capture_output=True,
            text=True,
            timeout=args.timeout,
        )
    except subprocess.TimeoutExpired as exc:
        return {"error": f"timed out after {args.timeout} s", "stderr": str(exc.stderr)[-2000:]}
    if done.returncode != 0 or not done.stdout.strip():
        return {"error": f"rc {done.returncode}", "stderr": done.stderr[-4000:]}
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    ap.add_argument("--code", type=Path, action="append", default=[], help="a checkout")
    ap.add_argument("--device", default="cpu", help="cpu or cuda")
    ap.add_argument("--seconds", type=float, default=60.0, help="training seconds per run")
    ap.add_argument("--warmup", type=float, default=5.0, help="seconds not counted in steps/s")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=None, help="seconds a run may take in all")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    args.data = args.data.resolve()
    codes = [c.resolve() for c in args.code] or [ROOT]
    runs = []
    for turn in range(args.repeats):
        for code in codes:
            result = {"code": revision(code), "turn": turn, **run(code, args)}
            runs.append(result)
            print(json.dumps(result), flush=True)
    print(
        f"\nConvFiT Stage 2 (OCL, 3 negatives), BANKING77 10-shot seed {args.seed}, {args.device}"
    )
    print(
        f"{'checkout':<12}{'steps/s':>9}{'setup s':>9}{'steps':>13}{'projected s':>13}{'zero':>7}"
    )
    for r in runs:
        if "error" in r:
            print(f"{r['code']:<12}failed: {r['error']}")
            continue
        print(
            f"{r['code']:<12}{r['steps_per_s']:>9.2f}{r['setup_s']:>9.1f}"
            f"{r['steps_done']:>6}/{r['planned_steps']:<6}{r['projected_s']:>13.1f}"
            f"{r['zero_loss_share']:>7.0%}"
        )
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"device": args.device, "runs": runs}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
