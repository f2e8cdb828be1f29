"""The benchmarks' one reader of the shared ``text,label`` CSV files (``../shared/data``)."""

from __future__ import annotations

import csv
from pathlib import Path


def read_csv(path: Path) -> tuple[list[str], list[str]]:
    """Texts and labels of a ``text,label`` CSV file, in file order."""
    with path.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    return [r["text"] for r in rows], [r["label"] for r in rows]
