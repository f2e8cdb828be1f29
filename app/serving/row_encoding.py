"""Every row of every project encoded in the background, resumable, with progress (issue 72
items 2, 3 and 5): :class:`RowSpaces`, one per process's live pools (:func:`spaces_of`).

An import of any size returns once its rows are written; the server's background thread
(:meth:`RowSpaces.start`, from its warm-up) sees the project's rows change and encodes the rows
its serving space lacks, :data:`CHUNK_ROWS` at a time, each chunk through the embedding cache
(one shard on disk per chunk: a kill -9 or a restart resumes where it stopped, re-encoding
nothing that was written) and into the project's row index (:mod:`app.serving.row_spaces`),
scoring its candidates for the labelling queue as it goes. The order is the one the designer
needs them in: the labelled rows first (they decide predictions), then the rows the queue
would show next in the space it orders in meanwhile (a new version's pool: the old space's
most uncertain and least covered), then every other unlabelled row in a seeded spread order
(so what is encoded at any moment is a sample of the whole file, the queue's first batch
included), then the test rows. A first card does not wait for the rest: the queue encodes a
first batch itself (:meth:`RowSpaces.first_batch`).

When a new version serves (:mod:`app.serving.pool_switch` builds its pool with its labelled rows
first) the space that serves changes: its rows are encoded the same way, in the background,
while the queue orders in the last space that holds every candidate
(:func:`app.services.queue.queue_order.ordering_pool`) and says so.

A team's workers share the work (:attr:`RowSpaces.fan_out`, set by ``serve`` when the queue is
a team's): the chunks go through the training queue to every worker (:mod:`app.worker.encoding`)
and the server picks their vectors up from the shared embedding cache
(:meth:`core.encoding.cache.EmbeddingCache.pick_up`); a chunk no worker did within
:data:`RESEND_S` is sent again.
"""

from __future__ import annotations

import logging
import threading
import time
import weakref

import numpy as np

from app.serving.live import LivePools
from app.serving.pools import ProjectPool
from app.serving.row_fan_out import FanOut, fan_out_step
from app.serving.row_plan import Plan, make_plan
from app.serving.row_progress import RowProgress
from app.serving.row_scores import FOLLOWED, follow, rescore_oldest, score_new
from app.serving.row_spaces import ProjectRows, RowSpace, seen_digest, space_name
from core.encoding.exit_gate import Exiting
from core.encoding.fair_share import SHARED
from core.errors import logged
from storage.errors import NotFoundError
from storage.pool_state import pool_revision
from storage.row_texts import row_states, row_texts

logger = logging.getLogger(__name__)

CHUNK_ROWS = 1024  # rows per background chunk (one embedding cache shard each)
POLL_S = 1.0  # how often an idle background looks for rows to encode
SYNC_REFRESH_ROWS = 20_000  # up to this size a key reads the rows' table again itself
REFRESH_S = 10.0  # the background reads a large project's rows again at most this often
SAVE_EVERY_S = 120.0  # a space that changed is kept on disk at least this often
RESCORE_CHUNK = 8192  # candidates per step of a full pass of the queue's scores
PASS_EVERY_S = 20.0  # a full pass starts at most this often, once the pool has changed
PASS_ROWS_S = 2000.0  # ... and at most once per this many candidates a second (250k: 125 s)
IN_FLIGHT = 8  # chunks handed to a team's workers at once
RESEND_S = 600.0  # a chunk no worker did within this long is sent again


class RowSpaces:
    """The row spaces of a process's projects and their background encoding (see the module)."""

    def __init__(self, live: LivePools) -> None:
        self.live = live
        self.root = live.cache.root / "rows" if live.cache.root is not None else None
        self._rows: dict[int, ProjectRows] = {}
        self._spaces: dict[tuple[int, str, bool], RowSpace] = {}
        self._plans: dict[tuple[int, str, bool], Plan] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.fan_out: FanOut | None = None
        self.progress = RowProgress(self.root)
        # per project: the space the serving pool's rows are encoded in (what progress counts)
        self.target: dict[int, RowSpace] = {}

    # --- the rows' table -----------------------------------------------------------------

    def rows(self, project_id: int, *, full: bool = False) -> ProjectRows:
        """The project's rows, read again where the database's moved: whole up to
        :data:`SYNC_REFRESH_ROWS` rows (or ``full``: the background), else only the rows added
        since (a key's path; the background reads the rest)."""
        with self._lock:
            known = self._rows.get(project_id)
        if full and known is not None and len(known) > SYNC_REFRESH_ROWS:
            full = time.monotonic() - known.read_at >= REFRESH_S  # a scan at most this often
        with self.live.db.session() as s:
            if full or known is None or len(known) <= SYNC_REFRESH_ROWS:
                _, n, version_sum = pool_revision(s, project_id)  # a scan of the project's rows
                stamp = (n, version_sum)
                if known is not None and known.stamp == stamp:
                    return known
                base = known if known is not None else ProjectRows(project_id)
                state = row_states(s, project_id)
                new, _ = base.changed(state)
                made = base.updated(state, row_texts(s, project_id, new), stamp)
            else:  # a key's path: the rows added since (an indexed range), the rest later
                state = row_states(s, project_id, after=known.max_id)
                if not state.ids:
                    return known
                made = known.with_added(state, row_texts(s, project_id, list(state.ids)))
        with self._lock:
            self._rows[project_id] = made
        return made

    def forget_rows(self, project_id: int, ids: list[int]) -> None:
        """Rows a key found are not candidates any more (answered elsewhere, deleted): left
        out of the table until it is read again."""
        with self._lock:
            known = self._rows.get(project_id)
            if known is not None:
                self._rows[project_id] = known.without(ids)

    # --- spaces --------------------------------------------------------------------------

    def space(self, project_id: int, pool: ProjectPool) -> RowSpace:
        """The project's row space of ``pool``'s encoder (read from disk the first time)."""
        encoder = pool.encoder
        key = (project_id, encoder.fingerprint, pool.use_context)
        with self._lock:
            found = self._spaces.get(key)
        if found is not None:
            found.used_at = time.monotonic()
            return found
        name = space_name(encoder.fingerprint, pool.use_context)
        path = self.root / str(project_id) / f"{name}.npz" if self.root is not None else None
        made = RowSpace(project_id, encoder.fingerprint, pool.use_context, encoder.dim, path)
        made.label = space_label(pool)
        if made.load() and made.loaded_seen != seen_digest(pool.items):
            made.frontier.seen = {}  # labels moved while it was away: followed from scratch
        elif made.loaded_seen:
            made.frontier.seen = dict(pool.items)
        with self._lock:
            found = self._spaces.setdefault(key, made)
            self._drop_old(project_id, keep=found)
        return found

    def spaces(self, project_id: int) -> list[RowSpace]:
        with self._lock:
            return [s for k, s in self._spaces.items() if k[0] == project_id]

    def _drop_old(self, project_id: int, keep: RowSpace) -> None:
        """Hold at most two spaces of a project, in memory and on disk: the newest (``keep``)
        and the other one used last (the queue orders in it while the newest is encoded); an
        older version's row index is deleted (called with the lock)."""
        mine = [k for k in self._spaces if k[0] == project_id and self._spaces[k] is not keep]
        mine.sort(key=lambda k: self._spaces[k].used_at)
        for k in mine[:-1]:
            self._spaces.pop(k, None)
            self._plans.pop(k, None)
        kept = {s.path for k, s in self._spaces.items() if k[0] == project_id}
        folder = keep.path.parent if keep.path is not None else None
        if folder is not None and folder.is_dir():
            for old in folder.glob("*.npz"):
                if old not in kept:
                    old.unlink(missing_ok=True)

    # --- encoding ------------------------------------------------------------------------

    def encode(
        self, project_id: int, rows: ProjectRows, pool: ProjectPool, space: RowSpace, ids: list[int]
    ) -> int:
        """Encode rows ``ids`` in ``space`` now (through the embedding cache: what another
        process or an earlier run encoded is read, not encoded) and score its candidates with
        ``pool`` when it is the pool of that space; how many rows were added."""
        ids = [i for i in ids if i in rows.texts]
        if not ids:
            return 0
        texts = [rows.text_of(i, space.use_context) for i in ids]
        encoder = pool.encoder
        vectors = self.live.cache.encode(encoder, texts)
        self._add(rows, pool, space, ids, vectors)
        return len(ids)

    def _add(
        self,
        rows: ProjectRows,
        pool: ProjectPool,
        space: RowSpace,
        ids: list[int],
        vectors: np.ndarray,
    ) -> None:
        keys = [rows.key_of(i, space.use_context) for i in ids]
        space.add(ids, keys, vectors)
        if pool.encoder.fingerprint == space.fingerprint:
            score_new(space, rows, pool, ids, vectors)

    def plan(self, rows: ProjectRows, space: RowSpace) -> Plan:
        """The space's rows still to encode, in the order they are needed (see the module);
        made again once the rows' table is another."""
        key = (space.project_id, space.fingerprint, space.use_context)
        with self._lock:
            known = self._plans.get(key)
        if known is not None and known.rows is rows:
            return known
        stale = space.stale_rows(rows)
        if stale:
            space.remove(stale)
        others = [s for s in self.spaces(space.project_id) if s is not space]
        made = make_plan(rows, space, others, known)
        with self._lock:
            self._plans[key] = made
        return made

    def holds_all(self, rows: ProjectRows, space: RowSpace) -> bool:
        """Whether ``space`` holds a vector of every unlabelled row of ``rows`` (known once
        per table and change of the space)."""
        if space.complete_for is not rows:
            space.complete = not space.missing(rows, rows.unlabelled())
            space.complete_for = rows
        return space.complete

    def adopt(self, rows: ProjectRows, pool: ProjectPool, space: RowSpace, ids: list[int]) -> int:
        """Add the rows of ``ids`` whose vectors the embedding cache holds already (encoded by
        a worker, an earlier run, another space's twin texts): no encoding; how many."""
        ids = [i for i in ids if i in rows.texts]
        keys = [rows.key_of(i, space.use_context) for i in ids]
        found = self.live.cache.lookup_keys(space.fingerprint, keys, space.dim)
        got = [n for n, v in enumerate(found) if v is not None]
        if got:
            vectors = np.stack([found[n] for n in got])  # type: ignore[misc]
            self._add(rows, pool, space, [ids[n] for n in got], vectors)
        return len(got)

    def score(self, rows: ProjectRows, pool: ProjectPool, space: RowSpace, ids: list[int]) -> int:
        """Score candidates the space holds but has no scores of (a row unlabelled again)."""
        with space.lock:
            held = [i for i in ids if i in space.index]
            vectors = space.index.vectors(held)
        return score_new(space, rows, pool, held, vectors)

    def first_batch(self, project_id: int, pool: ProjectPool, space: RowSpace, n: int) -> int:
        """Encode ``n`` unlabelled rows the space lacks now, a seeded sample of the whole file
        (the background's plan's when it has one: its rows not taken yet): what a first card
        waits for when nothing of the project is encoded yet
        (:data:`app.services.queue.queue_order.FIRST_BATCH`). It never waits for the
        background's chunk under way (its rows are out of the plan already)."""
        rows = self.rows(project_id)
        with self._lock:
            plan = self._plans.get((project_id, space.fingerprint, space.use_context))
        if plan is not None and plan.rows is rows:
            wanted = [i for i in plan.todo[: 8 * n] if rows.split.get(i) == "unlabelled"]
        else:
            unlabelled = rows.unlabelled()
            rng = np.random.default_rng(project_id)
            picks = rng.choice(len(unlabelled), min(len(unlabelled), 4 * n), replace=False)
            wanted = [unlabelled[j] for j in picks.tolist()]
        ids = space.missing(rows, wanted)[:n]
        return self.encode(project_id, rows, pool, space, ids)

    def step(self, project_id: int) -> bool:
        """One step of the project's background work: read its rows again if they moved,
        encode the next chunk its serving space lacks (or hand chunks to the workers, and pick
        up what they did), else one chunk of a full pass of the queue's scores; whether there
        was anything to do."""
        rows = self.rows(project_id, full=True)
        pool = self.live.pool(project_id)
        space = self.space(project_id, pool)
        self.target[project_id] = space
        follow(space, rows, pool, self.live.cache, FOLLOWED)  # off the keys' path
        plan = self.plan(rows, space)
        if self.fan_out is not None:
            worked = fan_out_step(
                self, rows, pool, space, plan, chunk=CHUNK_ROWS, most=IN_FLIGHT, resend=RESEND_S
            )
        else:
            worked = self._local_step(project_id, rows, pool, space, plan)
        self.progress.seen(project_id, space, rows)
        if not worked:
            worked = self._pass_step(space, pool)
        if space.dirty and (not plan.todo or time.monotonic() - space.saved_at > SAVE_EVERY_S):
            space.save()
        return worked

    def _local_step(
        self, project_id: int, rows: ProjectRows, pool: ProjectPool, space: RowSpace, plan: Plan
    ) -> bool:
        while plan.todo:
            chunk, plan.todo = plan.todo[:CHUNK_ROWS], plan.todo[CHUNK_ROWS:]
            chunk = space.missing(rows, chunk)
            if chunk:
                started = time.monotonic()
                done = self.encode(project_id, rows, pool, space, chunk)
                self.progress.chunk(project_id, done, time.monotonic() - started)
                return True
        return False

    def _pass_step(self, space: RowSpace, pool: ProjectPool) -> bool:
        if pool.encoder.fingerprint != space.fingerprint:
            return False
        now = time.monotonic()
        every = max(PASS_EVERY_S, len(space.frontier) / PASS_ROWS_S)  # a large pass less often
        if space.pass_rev is None and (
            (space.needs_pass or space.pool_rev > space.passed_rev)
            and now - space.passed_at >= every
        ):
            space.pass_rev = space.passed_rev = space.pool_rev
            space.passed_at = now
        return rescore_oldest(space, pool, RESCORE_CHUNK) > 0

    def encode_all(self, project_id: int, timeout: float = 3600.0) -> None:
        """Step until the project's serving space holds every row (tests, benches, the CLI)."""
        end = time.monotonic() + timeout
        while self.step(project_id) and time.monotonic() < end:
            if self.fan_out is not None:
                time.sleep(0.2)

    # --- the background ------------------------------------------------------------------

    def start(self) -> None:
        """Start the background thread (once; the server's warm-up calls it)."""
        with self._lock:
            if self._thread is not None:
                return
            self._thread = threading.Thread(target=self._run, name="row-encoding", daemon=True)
        self._thread.start()

    def _closed(self) -> bool:
        return self._stop.is_set() or self.live.heads.closed

    def _run(self) -> None:
        from storage.projects import list_projects

        while not self._closed():
            busy = False
            with self.live.db.session() as s:
                ids = [p.id for p in list_projects(s)]
            for pid in ids:
                if self._closed():
                    break
                SHARED.after_people()  # a card a person waits for goes first
                try:
                    busy = self.step(pid) or busy
                except Exiting:  # the process is exiting (core.encoding.exit_gate)
                    return
                except NotFoundError:  # deleted meanwhile
                    continue
                except Exception:  # this project waits; the others go on
                    logged(logger, "encoding the rows of project %s failed", pid)
                    self._stop.wait(5.0)
            self._stop.wait(0.2 if busy and self.fan_out is not None else 0 if busy else POLL_S)
        self.save_all()

    def save_all(self) -> None:
        with self._lock:
            spaces = list(self._spaces.values())
        for space in spaces:
            if space.dirty:
                space.save()

    def close(self, timeout: float = 30.0) -> None:
        """Stop the background (its chunk under way ends or is refused at the exit) and keep
        every changed space on disk."""
        self._stop.set()
        thread = self._thread
        if thread is not None:
            thread.join(timeout)
        self.save_all()


def space_label(pool: ProjectPool) -> str:
    """The words that name a pool's space: "v3" (its version), "the frozen base"."""
    return f"v{pool.model_version_id}" if pool.model_version_id is not None else "the base encoder"


_SPACES: weakref.WeakKeyDictionary[LivePools, RowSpaces] = weakref.WeakKeyDictionary()
_SPACES_LOCK = threading.Lock()


def spaces_of(live: LivePools) -> RowSpaces:
    """The row spaces of ``live``'s projects (one per live pools: a process's)."""
    with _SPACES_LOCK:
        found = _SPACES.get(live)
        if found is None:
            found = _SPACES[live] = RowSpaces(live)
        return found
