"""The benchmarks' one reader of the shared ``text,label`` CSV files (``../shared/data``)."""

from __future__ import annotations

import csv
from pathlib import Path


def read_csv(path: Path) -> tuple[list[str], list[str]]:
    """Texts and labels of a ``text,label`` CSV file, in file order."""
    with path.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    return [r["text"] for r in rows], [r["label"] for r in rows]


def first_per_intent(labels: list[str], shots: int) -> list[int]:
    """Rows of the first ``shots`` examples of each intent, in file order."""
    seen: dict[str, int] = {}
    keep = []
    for i, y in enumerate(labels):
        if seen.get(y, 0) < shots:
            seen[y] = seen.get(y, 0) + 1
            keep.append(i)
    return keep


def read_shots(folder: Path, shots: int, seed: int) -> tuple[list[str], list[str]]:
    """The ``shots``-per-intent training file of a seed: ``train_<shots>shot_seed<seed>.csv`` if the
    data set has it, else the first ``shots`` per intent of the 10-shot file (how the 5-shot cells
    of the benchmarks are made: the shared data ship 10- and 30-shot files only)."""
    own = folder / f"train_{shots}shot_seed{seed}.csv"
    if own.is_file():
        return read_csv(own)
    x, y = read_csv(folder / f"train_10shot_seed{seed}.csv")
    if shots > 10:
        raise FileNotFoundError(f"{own} is missing and cannot be cut from the 10-shot file.")
    keep = first_per_intent(y, shots)
    return [x[i] for i in keep], [y[i] for i in keep]
