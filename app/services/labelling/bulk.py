"""Bulk labelling (a map lasso, a table filter, a checkbox selection): say what will change and
what is protected before anything changes, then apply it as one batch that one Undo reverts.

Utterances that already have other intents are protected by default (*leave them*): only an
explicit ``relabel_labelled=True`` changes them, `test` rows included. A selection that already
carries exactly the target intents is left alone either way. Items the acting user may not change
now (a team's items: given to annotators, waiting for review, or accepted from their answers;
:mod:`app.access.policy`) are always left as they are, and the preview counts them.

The action does what its preview said: it takes the previewed ids (never a selection recomputed
from filters that may have changed since) and the preview's :attr:`BulkPlan.token` (a digest of
what it would change), and refuses, changing nothing, when the rows it would change now are not
exactly those (someone labelled one meanwhile): :class:`StalePreview`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import re
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from app.access import ItemPolicy, ProjectHandle, open_project, writing
from app.access.actions import EDIT
from app.services.labelling.data import parse_label_input
from storage import guard
from storage import utterances as repo
from storage.bulk_labels import Labelled, label_rows
from storage.db import Database, Session
from storage.errors import ConflictError, NotFoundError, StorageError
from storage.faults import fault_point
from storage.names import project_index
from storage.unknown_intents import check_known

logger = logging.getLogger(__name__)

# Rows a bulk label changes in one transaction: about 0.6 s of SQLite's write lock on the shared
# 2 cores under heavy load (bench/RESULTS.md), so a save that comes meanwhile waits for one chunk
# at most, far within the busy timeout.
CHUNK_ROWS = 2000
# Between two chunks the bulk label lets go of the lock this long: SQLite's busy handler retries
# a waiting writer at most every 100 ms, so a pause a bit longer lets every waiting save in.
CHUNK_PAUSE_S = 0.12


class StalePreview(ConflictError):
    """The rows a bulk label would change are not the ones its preview said; nothing changed."""


@dataclass(frozen=True)
class BulkPlan:
    """What a bulk label does to a selection."""

    project_id: int
    target: tuple[str, ...]
    selected: int
    fresh: tuple[int, ...]  # no intent yet: they get the target
    labelled: tuple[int, ...]  # other intents: left as they are unless relabel_labelled
    labelled_intents: int
    labelled_test: int
    relabel_labelled: bool
    protected: tuple[int, ...] = ()  # the acting user may not change them now: left as they are
    batch: str = ""  # once applied: the batch that one Undo reverts ("" when nothing changed)
    # once applied in chunks: rows to change that someone else changed (or locked) while it was
    # applied, left as they set them (the others are in ``change``)
    meanwhile: tuple[int, ...] = ()

    @property
    def change(self) -> tuple[int, ...]:
        return self.fresh + self.labelled if self.relabel_labelled else self.fresh

    @property
    def target_text(self) -> str:
        return ", ".join(self.target) or "no intent"

    @property
    def token(self) -> str:
        """A digest of what this preview would do (project, intents, choice, the rows selected
        and those it would change): applying it again gives the same token only when it would
        do exactly this.

        Example:
            >>> a = BulkPlan(1, ("x",), 2, (5,), (6,), 1, 0, False)
            >>> a.token == dataclasses.replace(a, batch="b").token, a.token == BulkPlan(
            ...     1, ("x",), 2, (5, 6), (), 0, 0, False).token
            (True, False)
        """
        what = [
            self.project_id,
            list(self.target),
            self.relabel_labelled,
            self.selected,
            sorted(self.change),
            sorted(self.labelled),
            sorted(self.protected),
        ]
        return hashlib.sha256(json.dumps(what).encode()).hexdigest()[:16]

    def summary(self) -> str:
        """One sentence for the person about to press Label.

        Example:
            >>> BulkPlan(1, ("x",), 54, tuple(range(26)), tuple(range(28)), 5, 10, False).summary()
            '54 selected: 26 unlabelled will become x; 28 already labelled (5 intents, 10 in test) will be left as they are.'
        """
        parts = [
            f"{self.selected} selected: {len(self.fresh)} unlabelled will become {self.target_text}"
        ]
        if self.labelled:
            what = (
                f"{len(self.labelled)} already labelled ({self.labelled_intents} intents, "
                f"{self.labelled_test} in test)"
            )
            parts.append(
                f"{what} will be relabelled too"
                if self.relabel_labelled
                else f"{what} will be left as they are"
            )
        if self.protected:
            parts.append(
                f"{len(self.protected)} you may not change now (given to annotators, waiting "
                "for review, or accepted from their answers) will be left as they are"
            )
        if self.meanwhile:
            parts.append(
                f"{len(self.meanwhile)} changed by someone else while this was applied were left "
                "as they set them"
            )
        return "; ".join(parts) + "."


def _plan_versions(
    s: Session,
    p: ProjectHandle,
    ids: Sequence[int],
    target: list[str],
    relabel_labelled: bool,
    create: bool = False,
) -> tuple[BulkPlan, dict[int, int]]:
    """The plan, and the version of each row it read (a later chunk writes a row only if it is
    still at that version). An intent the project does not have is refused naming the nearest,
    unless ``create`` (:mod:`storage.unknown_intents`): before the preview, not at Label."""
    if not create:
        check_known(s, p.id, target)
    rows = repo.rows_by_id(s, p.id, list(dict.fromkeys(ids)))
    known = project_index(s, p.id)  # "Greet" names the intent greet: rows with it are done
    wanted = tuple(sorted({known.find(name) or name for name in target}))
    changing = [r for r in rows if tuple(sorted(r.labels)) != wanted]
    locked = ItemPolicy(p.actor.id, p.role).refused(s, p.id, [r.id for r in changing])
    free = [r for r in changing if r.id not in locked]
    fresh = tuple(r.id for r in free if not r.labels)
    others = [r for r in free if r.labels]
    plan = BulkPlan(
        p.id,
        wanted,
        len(rows),
        fresh if wanted else (),
        tuple(r.id for r in others),
        len({name for r in others for name in r.labels}),
        sum(r.split == "test" for r in others),
        relabel_labelled,
        tuple(r.id for r in changing if r.id in locked),
    )
    return plan, {r.id: r.version for r in rows}


def plan_label(
    db: Database,
    p: ProjectHandle,
    utterance_ids: Sequence[int],
    labels: str | list[str] | None,
    *,
    relabel_labelled: bool = False,
    create: bool = False,
) -> BulkPlan:
    """What :func:`label_many` would do, without doing it (the preview)."""
    with db.session() as s:
        target = parse_label_input(labels)
        return _plan_versions(s, p, utterance_ids, target, relabel_labelled, create)[0]


def label_many(
    db: Database,
    p: ProjectHandle,
    utterance_ids: Sequence[int],
    labels: str | list[str] | None,
    *,
    relabel_labelled: bool = False,
    token: str | None = None,
    expected: Sequence[int] | None = None,
    all_or_nothing: bool = False,
    create: bool = False,
) -> BulkPlan:
    """Label a selection as one batch (one Undo reverts all of it). Already labelled utterances
    are left as they are unless ``relabel_labelled``; items the user may not change now always.
    Returns what was done (its ``change``: the rows changed). An intent the project does not
    have is refused naming the nearest, unless ``create`` (:mod:`storage.unknown_intents`).

    ``token``: the :attr:`BulkPlan.token` of the preview shown (or ``expected``: the ids it said
    would change); when given, anything else is refused and nothing changes. ``all_or_nothing``:
    an item the user may not change refuses the whole change instead of being left out (a fix
    that names its rows), and the change is one transaction whatever its size.

    A selection of more than :data:`CHUNK_ROWS` rows to change is written in short transactions
    of that many rows (well under a second of write lock each), so that others keep saving meanwhile: the
    first checks the preview against the rows as they are and writes the first chunk; each
    next one writes its rows only where they are still as the first found them, and leaves a row
    someone changed in between as they set it (:attr:`BulkPlan.meanwhile`). Every chunk is a
    consistent state (whole rows with their labels, split, version and audit event) under the one
    batch id: a bulk label stopped half-way (a crash, kill -9) keeps the chunks it committed,
    and one Undo of its batch takes them back.

    Raises:
        StalePreview: the rows to change are not the previewed ones (or one was deleted).
        ValueError: a ``token`` that no preview gives (malformed input, not a stale preview).
        ItemLockedError: ``all_or_nothing`` and an item the user may not change now.
    """
    target = parse_label_input(labels)
    batch = str(uuid.uuid4())
    with writing(db, p) as s:
        plan, versions = _checked(
            s, p, utterance_ids, target, relabel_labelled, token, expected, all_or_nothing, create
        )
        todo = list(plan.change)
        size = max(1, len(todo)) if all_or_nothing else CHUNK_ROWS
        chunks = [todo[i : i + size] for i in range(0, len(todo), size)] or [[]]
        done = _write(s, p, plan.target, chunks[0], versions, batch, create)
    for n, chunk in enumerate(chunks[1:], start=2):
        time.sleep(CHUNK_PAUSE_S)  # let the saves that waited in
        fault_point("bulk.next_chunk")  # a crash test's kill -9, with a chunk committed
        try:
            p = open_project(db, p.id, p.actor, need=EDIT.role)  # left, or deleted, meanwhile?
            with writing(db, p) as s:
                done = _add(done, _write(s, p, plan.target, chunk, versions, batch, create))
        except (StorageError, PermissionError) as exc:
            raise type(exc)(
                f"{exc} The bulk label stopped after {len(done.changed)} of {len(todo)} row(s) "
                f"(chunk {n} of {len(chunks)}); Undo takes back what it changed."
            ) from exc
    if len(chunks) > 1:
        logger.info("bulk label of %d row(s) in %d transactions", len(todo), len(chunks))
    left = set(done.moved) | set(done.protected)
    return dataclasses.replace(
        plan,
        fresh=tuple(i for i in plan.fresh if i not in left),
        labelled=tuple(i for i in plan.labelled if i not in left or not relabel_labelled),
        meanwhile=tuple(i for i in todo if i in left),
        batch=batch if done.changed else "",
    )


def _checked(
    s: Session,
    p: ProjectHandle,
    ids: Sequence[int],
    target: list[str],
    relabel_labelled: bool,
    token: str | None,
    expected: Sequence[int] | None,
    all_or_nothing: bool,
    create: bool = False,
) -> tuple[BulkPlan, dict[int, int]]:
    """The plan of the change as the rows are now (in the write transaction) and the versions
    of its rows, refused when it is not what the preview said (a previewed row deleted since
    included: the preview is stale, not the request malformed)."""
    if token is not None and not re.fullmatch(r"[0-9a-f]{16}", token):
        raise ValueError(
            "This is not a preview's token: preview first (`preview: true`) and send the "
            "`token` it answers. Nothing was changed."
        )
    try:
        plan, versions = _plan_versions(s, p, ids, target, relabel_labelled, create)
    except NotFoundError as exc:
        if token is None and expected is None:
            raise
        raise StalePreview(
            f"{exc} It was deleted since the preview. Preview again. Nothing was changed."
        ) from exc
    if all_or_nothing:
        guard.check(s, p.id, list(plan.protected))
    stale = (token is not None and token != plan.token) or (
        expected is not None and sorted(plan.change) != sorted(expected)
    )
    if stale:
        said = f"{len(expected)} row(s)" if expected is not None else "other rows"
        raise StalePreview(
            f"The preview said {said} would change; now {len(plan.change)} would (rows "
            "were labelled meanwhile, or the selection changed). Preview again. Nothing was "
            "changed."
        )
    return plan, versions


def _write(
    s: Session,
    p: ProjectHandle,
    target: tuple[str, ...],
    ids: list[int],
    versions: dict[int, int],
    batch: str,
    create: bool = False,
) -> Labelled:
    """Label ``ids`` where they are still at the version the plan read."""
    chunk = {i: versions[i] for i in ids}
    return label_rows(
        s, p.id, chunk, list(target), batch=batch, user_id=p.actor.id, create_missing_intents=create
    )


def _add(a: Labelled, b: Labelled) -> Labelled:
    return Labelled(a.changed + b.changed, a.moved + b.moved, a.protected + b.protected)
