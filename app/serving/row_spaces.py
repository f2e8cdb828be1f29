"""Every row of a project in a vector space (issue 72): the rows as the database has them
(:class:`ProjectRows`), and, per space (an encoder's fingerprint, with or without the turn
before each row), the vectors of the rows encoded in it so far (:class:`RowSpace`): a
:class:`core.retrieval.row_index.RowIndex` by row id, the text each vector encodes, and the
labelling queue's scores of its candidates (:class:`core.labelling.frontier.Frontier`).

A space is kept on disk beside the embedding cache (``<cache>/rows/<project>/<space>.npz``: the
index, each row's text key, the queue's scores), written in the background
(:meth:`RowSpace.save`), so a restart reads it instead of building it again; what changed
meanwhile (rows added, edited, deleted) is brought over from the embedding cache, which keeps
every vector a chunk encoded (a kill -9 loses at most the chunk under way). Who fills the spaces:
:mod:`app.serving.row_encoding`.

Locks: one per space, held for its index's and scores' changes and reads (milliseconds); the
rows' table is replaced whole, never changed in place.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from core.encoding.cache import text_key
from core.encoding.previous_turn import with_context
from core.labelling.frontier import Frontier
from core.retrieval import row_index
from core.retrieval.row_index import RowIndex
from storage.row_texts import RowState

logger = logging.getLogger(__name__)


@dataclass
class ProjectRows:
    """A project's rows as last read: split and version by id, the text and context of each,
    and the stamp (row count, sum of versions) they were read at."""

    project_id: int
    split: dict[int, str] = field(default_factory=dict)
    version: dict[int, int] = field(default_factory=dict)
    texts: dict[int, tuple[str, str]] = field(default_factory=dict)
    stamp: tuple[int, int] = (-1, -1)
    read_at: float = 0.0
    _keys: dict[tuple[int, bool], str] = field(default_factory=dict)
    _unlabelled: list[int] | None = field(default=None, repr=False)
    _others: list[int] | None = field(default=None, repr=False)
    _max_id: int | None = field(default=None, repr=False)

    def __len__(self) -> int:
        return len(self.split)

    @property
    def max_id(self) -> int:
        if self._max_id is None:
            self._max_id = max(self.split, default=0)
        return self._max_id

    def unlabelled(self) -> list[int]:
        """The queue's candidates (kept once read: a table is replaced, never changed)."""
        if self._unlabelled is None:
            self._unlabelled = [i for i, s in self.split.items() if s == "unlabelled"]
        return self._unlabelled

    def others(self) -> list[int]:
        """The rows that are not the queue's candidates (labelled, test, gone)."""
        if self._others is None:
            self._others = [i for i, s in self.split.items() if s != "unlabelled"]
        return self._others

    def text_of(self, row_id: int, use_context: bool) -> str:
        """What the encoder sees for the row (as :meth:`app.serving.pools.ProjectPool.text_of`)."""
        text, context = self.texts[row_id]
        return with_context(text, context) if use_context else text

    def key_of(self, row_id: int, use_context: bool) -> str:
        """The embedding cache's key of :meth:`text_of` (kept once computed)."""
        key = self._keys.get((row_id, use_context))
        if key is None:
            key = self._keys[(row_id, use_context)] = text_key(self.text_of(row_id, use_context))
        return key

    def changed(self, state: RowState) -> tuple[list[int], list[int]]:
        """Rows ``state`` (read now) holds that this table lacks or holds at another version,
        and the ids this table holds that are gone."""
        new = [
            i for i, v in zip(state.ids, state.versions, strict=True) if self.version.get(i) != v
        ]
        gone = set(self.split) - set(state.ids)
        return new, sorted(gone)

    def updated(
        self, state: RowState, texts: dict[int, tuple[str, str]], stamp: tuple[int, int]
    ) -> ProjectRows:
        """A new table: ``state`` with the texts of the rows read again (``texts``) and the
        others' kept."""
        kept = {i: self.texts[i] for i in state.ids if i in self.texts and i not in texts}
        keys = {k: v for k, v in self._keys.items() if k[0] in kept}
        return ProjectRows(
            self.project_id,
            dict(zip(state.ids, state.splits, strict=True)),
            dict(zip(state.ids, state.versions, strict=True)),
            {**kept, **{i: texts[i] for i in state.ids if i in texts}},
            stamp,
            time.monotonic(),
            keys,
        )

    def with_added(self, state: RowState, texts: dict[int, tuple[str, str]]) -> ProjectRows:
        """This table and the rows ``state`` holds (read since, with their ``texts``); its
        stamp stays, so the next full read brings the rest (labels, edits, deletions)."""
        return ProjectRows(
            self.project_id,
            {**self.split, **dict(zip(state.ids, state.splits, strict=True))},
            {**self.version, **dict(zip(state.ids, state.versions, strict=True))},
            {**self.texts, **{i: texts[i] for i in state.ids if i in texts}},
            self.stamp,
            self.read_at,
            self._keys,
        )

    def without(self, ids: Iterable[int]) -> ProjectRows:
        """This table with ``ids`` no longer candidates (answered or deleted elsewhere: a key
        found them so); the next full read says what they are."""
        split = dict(self.split)
        for i in ids:
            if i in split:
                split[i] = "gone"
        return ProjectRows(
            self.project_id, split, self.version, self.texts, (-1, -1), self.read_at, self._keys
        )


def space_name(fingerprint: str, use_context: bool) -> str:
    """A space's file name: its fingerprint made safe, and whether rows carry their context."""
    safe = "".join(c if c.isalnum() or c in "-_.@+" else "_" for c in fingerprint)
    digest = hashlib.sha1(fingerprint.encode("utf-8")).hexdigest()[:8]
    return f"{safe[:80]}-{digest}{'-context' if use_context else ''}"


class RowSpace:
    """The vectors of a project's rows in one space, and the queue's scores of its candidates
    (see the module). ``label``: the words that name the space ("v3", "the frozen base")."""

    def __init__(
        self,
        project_id: int,
        fingerprint: str,
        use_context: bool,
        dim: int,
        path: Path | None,
        *,
        switch_at: int | None = None,
    ) -> None:
        self.project_id = project_id
        self.fingerprint = fingerprint
        self.use_context = use_context
        self.dim = dim
        self.path = path
        self.index = RowIndex(dim, switch_at=switch_at or row_index.SWITCH_AT)
        self.keys: dict[int, str] = {}  # row id -> the text key its vector encodes
        self.frontier = Frontier()
        self.lock = threading.Lock()
        self.pool_rev = 0  # counts the changes of the labelled pool the scores followed
        self.needs_pass = True  # some scores may be stale: a full pass is due
        self.pass_rev: int | None = None  # a full pass under way scores rows up to this revision
        self.passed_rev = -1  # the pool revision the last full pass started at
        self.passed_at = 0.0  # when it started (monotonic)
        self.dirty = False  # changed since saved
        self.complete = False  # holds every unlabelled row of ``complete_for``
        self.complete_for: ProjectRows | None = None
        self.saved_at = time.monotonic()
        self.label = ""
        self.used_at = time.monotonic()  # when an order or the background last asked for it
        self.loaded_seen = ""  # the digest of the labelled pool the scores read from disk followed

    def __len__(self) -> int:
        return len(self.keys)

    def add(self, ids: list[int], keys: list[str], vectors: np.ndarray) -> None:
        """Rows encoded (their text keys and vectors); a row held is replaced."""
        if not ids:
            return
        with self.lock:
            self.index.add(np.asarray(ids, dtype=np.int64), vectors)
            self.keys.update(zip(ids, keys, strict=True))
            self.dirty = True
            self.complete_for = None

    def remove(self, ids: Iterable[int]) -> None:
        gone = [i for i in ids if i in self.keys]
        if not gone:
            return
        with self.lock:
            self.index.remove(gone)
            self.frontier.drop(gone)
            for i in gone:
                self.keys.pop(i, None)
            self.dirty = True
            self.complete_for = None

    def missing(self, rows: ProjectRows, ids: Iterable[int] | None = None) -> list[int]:
        """The rows (of ``ids``; default: all) whose text this space holds no vector of."""
        ctx = self.use_context
        keys = self.keys
        return [
            i
            for i in (rows.split if ids is None else ids)
            if i in rows.texts and keys.get(i) != rows.key_of(i, ctx)
        ]

    def stale_rows(self, rows: ProjectRows) -> list[int]:
        """Rows held that are gone or whose text changed since they were encoded."""
        ctx = self.use_context
        return [i for i in self.keys if i not in rows.texts or self.keys[i] != rows.key_of(i, ctx)]

    # --- on disk -------------------------------------------------------------------------

    def save(self) -> None:
        """Write the space (index, keys, the queue's scores) atomically; a failure is logged
        (the next start brings it over from the embedding cache)."""
        if self.path is None:
            return
        with self.lock:
            ids = np.fromiter(self.keys, dtype=np.int64, count=len(self.keys))
            keys = np.array([self.keys[i] for i in ids.tolist()], dtype="U40")
            f = self.frontier
            extra = {
                "row_ids": ids,
                "row_keys": keys,
                "f_ids": f.ids.copy(),
                "f_margin": f.margin.copy(),
                "f_cover": f.cover.copy(),
                "f_live": f.live.copy(),
                "f_seen": np.array([seen_digest(f.seen)], dtype="U40"),
            }
            index = self.index
            self.dirty = False
            self.saved_at = time.monotonic()
            try:
                index.save(self.path, extra)
            except OSError as exc:
                self.dirty = True
                logger.warning("could not keep the vectors of project %s: %s", self.project_id, exc)

    def load(self) -> bool:
        """Read the space :meth:`save` wrote; False when there is none or it does not read."""
        if self.path is None or not self.path.is_file():
            return False
        try:
            index, extra = RowIndex.load(self.path)
            ids, keys = extra["row_ids"], extra["row_keys"]
            if index.dim != self.dim or len(ids) != len(keys) or len(ids) != len(index):
                raise ValueError("its rows do not match its vectors")
        except (OSError, ValueError, KeyError) as exc:
            logger.warning("dropping the unreadable row index %s: %s", self.path, exc)
            self.path.unlink(missing_ok=True)
            return False
        with self.lock:
            self.index = index
            self.keys = dict(zip(ids.tolist(), keys.tolist(), strict=True))
            f = Frontier()
            if "f_ids" in extra and len(extra["f_ids"]):
                live = extra["f_live"].astype(bool)
                f.put(extra["f_ids"][live], extra["f_margin"][live], extra["f_cover"][live], 0)
            self.frontier = f
            self.loaded_seen = str(extra["f_seen"][0]) if "f_seen" in extra else ""
            self.needs_pass = True
        return True


def seen_digest(seen: dict[int, tuple[str, tuple[str, ...]]]) -> str:
    """A digest of the labelled pool a frontier's scores follow (its ids, texts, intents)."""
    h = hashlib.sha1()
    for i in sorted(seen):
        text, labels = seen[i]
        h.update(f"{i}\x00{text}\x00{','.join(labels)}\x01".encode())
    return h.hexdigest()
