"""Out-of-scope calibration in the app: the thresholds come from the labelled train pool scored
as the live predictor scores it, never from the test split that reports accuracy."""

from __future__ import annotations

import csv
from pathlib import Path

from app.services.projects import projects
from app.services.projects.io import destination, import_file
from tests.handles import live

INTENTS = 12


def _banking(shared_data: Path, out: Path, *, tests: bool) -> Path:
    """12 BANKING77 intents: their 10-shot train rows, and (``tests``) 5 test rows each."""
    folder = shared_data / "banking77"
    with (folder / "train_10shot_seed0.csv").open(encoding="utf-8", newline="") as f:
        train = list(csv.DictReader(f))
    names = sorted({r["label"] for r in train})[:INTENTS]
    rows = [(r["text"], r["label"], "train") for r in train if r["label"] in names]
    if tests:
        with (folder / "test.csv").open(encoding="utf-8", newline="") as f:
            test = [r for r in csv.DictReader(f) if r["label"] in names]
        rows += [(r["text"], r["label"], "test") for n in names for r in test if r["label"] == n][
            : 5 * INTENTS
        ]
    with out.open("w", encoding="utf-8", newline="") as f:
        w = csv.writer(f)
        w.writerow(["text", "label", "split"])
        w.writerows(rows)
    return out


def test_the_test_split_never_moves_the_out_of_scope_threshold(
    serving_state, shared_data, tmp_path
):
    import_file(
        serving_state.db,
        destination(serving_state.db, "with_tests"),
        _banking(shared_data, tmp_path / "a.csv", tests=True),
    )
    import_file(
        serving_state.db,
        destination(serving_state.db, "no_tests"),
        _banking(shared_data, tmp_path / "b.csv", tests=False),
    )
    with_tests = projects.out_of_scope(serving_state.live, live(serving_state, "with_tests"))
    alone = projects.out_of_scope(serving_state.live, live(serving_state, "no_tests"))
    # the same train pool, the same anchors: the same thresholds, whatever the test split holds
    assert with_tests["thresholds"] == alone["thresholds"]
    assert with_tests["thresholds"]["default"] > 0
    assert "test split is not used" in with_tests["message"]
    assert "names and descriptions" in with_tests["message"]


def test_a_restart_reads_the_pools_calibration_instead_of_calibrating_it_again(
    serving_state, demo, monkeypatch, request
):
    from app.services.labelling import data as data_svc
    from app.serving import pools
    from app.serving.state import ServingState

    pid = demo.id
    first = dict(serving_state.live.pool(pid).predictor.thresholds)
    assert first  # calibrated
    calls: list[int] = []
    real = pools.calibrate_predictor
    monkeypatch.setattr(
        pools, "calibrate_predictor", lambda *a, **k: calls.append(1) or real(*a, **k)
    )
    restarted = ServingState.open(
        serving_state.settings, database=serving_state.db
    )  # a new process on the same data
    request.addfinalizer(restarted.close)
    assert restarted.live.pool(pid).predictor.thresholds == first and calls == []
    data_svc.add_utterance(
        serving_state.db, demo, "where is my parcel now", ["track_order"], "train"
    )
    restarted.live.pool(pid)  # the pool changed: calibrated again, in the background
    assert restarted.live.calibrations.settle() and calls == [1]
