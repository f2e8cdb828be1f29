"""How far the background encoding of a project's rows is (issue 72 item 2), in numbers and
words, for the Label tab's line, the CLI and REST (:class:`EncodingProgress`), and which space
the queue orders in meanwhile (item 3: every view says which it shows).

Example:
    >>> p = EncodingProgress(250_000, 120_000, "v4", "v3", 400.0)
    >>> p.words()
    "v4's space: 120,000 of 250,000 rows encoded, about 5 min left; the queue orders in v3's meanwhile"
    >>> EncodingProgress(4_000, 4_000, "v4", "v4", None).words()
    ''
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from app.serving.row_spaces import ProjectRows, RowSpace

logger = logging.getLogger(__name__)

# Chunks whose speed the rate averages over.
RATE_WINDOW = 8
# How often a project's progress is written for the CLI (``<cache>/rows/<project>/progress.json``).
WRITE_EVERY_S = 2.0
FILE = "progress.json"


@dataclass(frozen=True)
class EncodingProgress:
    """``rows`` of the project, ``encoded`` of them in the ``space`` that serves it, the space
    the queue ``ordered_in`` last, and the background's ``rate`` (rows a second; None: not
    measured yet)."""

    rows: int
    encoded: int
    space: str
    ordered_in: str
    rate: float | None

    @property
    def done(self) -> bool:
        return self.encoded >= self.rows

    @property
    def seconds_left(self) -> float | None:
        if self.done:
            return 0.0
        return (self.rows - self.encoded) / self.rate if self.rate else None

    def words(self) -> str:
        """One line, empty once every row is encoded and the queue orders in that space."""
        if self.done and self.ordered_in in ("", self.space):
            return ""
        left = self.seconds_left
        eta = ""
        if left:
            eta = (
                f", about {left / 60:.0f} min left" if left >= 90 else f", about {left:.0f} s left"
            )
        counts = f"{self.encoded:,} of {self.rows:,} rows encoded{eta}"
        if self.ordered_in and self.ordered_in != self.space:
            return (
                f"{self.space}'s space: {counts}; the queue orders in {self.ordered_in}'s meanwhile"
            )
        return f"Encoding in the background: {counts}; the queue orders those so far"

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "done": self.done, "seconds_left": self.seconds_left}

    @classmethod
    def from_dict(cls, found: dict[str, Any]) -> EncodingProgress:
        return cls(**{f.name: found[f.name] for f in fields(cls)})


def encoding_line(found: dict[str, Any]) -> str:
    """:meth:`EncodingProgress.words` of a progress as :meth:`~EncodingProgress.to_dict` wrote
    it, or that every row is encoded.

    Example:
        >>> print(encoding_line(EncodingProgress(4_000, 4_000, "v2", "v2", None).to_dict()))
        every row encoded (4,000, in v2's space)
    """
    said = EncodingProgress.from_dict(found)
    return said.words() or f"every row encoded ({said.rows:,}, in {said.space}'s space)"


def read_progress(root: Path | None, project_id: int) -> EncodingProgress | None:
    """What the server last wrote of a project's encoding (the CLI on its machine reads it);
    None when nothing was written or it does not read."""
    if root is None:
        return None
    try:
        found = json.loads((root / str(project_id) / FILE).read_text("utf-8"))
        return EncodingProgress.from_dict(found)
    except (OSError, ValueError, KeyError, TypeError):
        return None


class RowProgress:
    """Per project: what the background last saw (rows, encoded, space), its speed, and the
    space the queue ordered in."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = root  # where each project's progress is written (None: nowhere)
        self._written: dict[int, float] = {}
        self._lock = threading.Lock()
        self._seen: dict[int, tuple[int, int, str]] = {}
        self._chunks: dict[int, list[tuple[int, float]]] = {}
        self._ordered: dict[int, str] = {}

    def seen(self, project_id: int, space: RowSpace, rows: ProjectRows) -> None:
        with self._lock:
            seen = (len(rows), min(len(space), len(rows)), space.label)
            ended = seen[0] == seen[1] and self._seen.get(project_id) != seen
            self._seen[project_id] = seen
            due = time.monotonic() - self._written.get(project_id, -1e9) >= WRITE_EVERY_S
            if due or ended:  # the end is always written
                self._written[project_id] = time.monotonic()
        if due or ended:
            self._write(project_id)

    def _write(self, project_id: int) -> None:
        found = self.of(project_id)
        if self.root is None or found is None:
            return
        folder = self.root / str(project_id)
        tmp = folder / f".{FILE}.{os.getpid()}.tmp"
        try:
            folder.mkdir(parents=True, exist_ok=True)
            tmp.write_text(json.dumps(found.to_dict()), "utf-8")
            os.replace(tmp, folder / FILE)
        except OSError as exc:  # the CLI says less; nothing else depends on it
            logger.debug("could not write the progress of project %s: %s", project_id, exc)

    def chunk(self, project_id: int, rows: int, seconds: float) -> None:
        with self._lock:
            kept = self._chunks.setdefault(project_id, [])
            kept.append((rows, max(seconds, 1e-6)))
            del kept[:-RATE_WINDOW]

    def ordered(self, project_id: int, label: str) -> None:
        with self._lock:
            self._ordered[project_id] = label

    def of(self, project_id: int) -> EncodingProgress | None:
        """What the background knows of the project (None: it has not looked at it yet)."""
        with self._lock:
            seen = self._seen.get(project_id)
            chunks = list(self._chunks.get(project_id, []))
            ordered = self._ordered.get(project_id, "")
        if seen is None:
            return None
        rate = sum(n for n, _ in chunks) / sum(t for _, t in chunks) if chunks else None
        rows, encoded, space = seen
        return EncodingProgress(rows, encoded, space, ordered, rate)
