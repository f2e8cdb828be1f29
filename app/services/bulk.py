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
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from app.access import ItemPolicy, ProjectHandle, writing
from app.context import AppContext
from app.services.data import parse_label_input
from storage import guard
from storage import utterances as repo
from storage.db import Session
from storage.errors import ConflictError
from storage.names import project_index


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
        return "; ".join(parts) + "."


def _plan(
    s: Session, p: ProjectHandle, ids: Sequence[int], target: list[str], relabel_labelled: bool
) -> BulkPlan:
    rows = repo.rows_by_id(s, p.id, list(dict.fromkeys(ids)))
    known = project_index(s, p.id)  # "Greet" names the intent greet: rows with it are done
    wanted = tuple(sorted({known.find(name) or name for name in target}))
    changing = [r for r in rows if tuple(sorted(r.labels)) != wanted]
    locked = ItemPolicy(p.actor.id, p.role).refused(s, p.id, [r.id for r in changing])
    free = [r for r in changing if r.id not in locked]
    fresh = tuple(r.id for r in free if not r.labels)
    others = [r for r in free if r.labels]
    return BulkPlan(
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


def plan_label(
    ctx: AppContext,
    p: ProjectHandle,
    utterance_ids: Sequence[int],
    labels: str | list[str] | None,
    *,
    relabel_labelled: bool = False,
) -> BulkPlan:
    """What :func:`label_many` would do, without doing it (the preview)."""
    with ctx.db.session() as s:
        return _plan(s, p, utterance_ids, parse_label_input(labels), relabel_labelled)


def label_many(
    ctx: AppContext,
    p: ProjectHandle,
    utterance_ids: Sequence[int],
    labels: str | list[str] | None,
    *,
    relabel_labelled: bool = False,
    token: str | None = None,
    expected: Sequence[int] | None = None,
    all_or_nothing: bool = False,
) -> BulkPlan:
    """Label a selection as one batch (one Undo reverts all of it). Already labelled utterances
    are left as they are unless ``relabel_labelled``; items the user may not change now always.
    Returns what was done.

    ``token``: the :attr:`BulkPlan.token` of the preview shown (or ``expected``: the ids it said
    would change); when given, anything else is refused and nothing changes. ``all_or_nothing``:
    an item the user may not change refuses the whole change instead of being left out (a fix
    that names its rows).

    Raises:
        StalePreview: the rows to change are not the previewed ones.
        ItemLockedError: ``all_or_nothing`` and an item the user may not change now.
    """
    target = parse_label_input(labels)
    batch = str(uuid.uuid4())
    with writing(ctx, p) as s:
        plan = _plan(s, p, utterance_ids, target, relabel_labelled)
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
        for uid in plan.change:
            repo.set_labels(s, p.id, uid, target, user_id=p.actor.id, batch=batch)
    return dataclasses.replace(plan, batch=batch if plan.change else "")
