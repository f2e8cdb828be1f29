"""Bulk labelling (a map lasso, a table filter, a checkbox selection): say what will change and
what is protected before anything changes, then apply it as one batch that one Undo reverts.

Utterances that already have other intents are protected by default (*leave them*): only an
explicit ``relabel_labelled=True`` changes them, `test` rows included. A selection that already
carries exactly the target intents is left alone either way.

The action does what its preview said: it takes the previewed ids (never a selection recomputed
from filters that may have changed since) and, given the preview's ``expected`` change, refuses
when the rows it would change are no longer exactly those (someone labelled one meanwhile).
"""

from __future__ import annotations

import dataclasses
import uuid
from dataclasses import dataclass
from typing import Any

from app.context import AppContext
from app.services.data import acting_user, parse_label_input, project_id_in
from storage import utterances as repo


@dataclass(frozen=True)
class BulkPlan:
    """What a bulk label does to a selection."""

    target: tuple[str, ...]
    selected: int
    fresh: tuple[int, ...]  # no intent yet: they get the target
    labelled: tuple[int, ...]  # other intents: left as they are unless relabel_labelled
    labelled_intents: int
    labelled_test: int
    relabel_labelled: bool
    batch: str = ""  # once applied: the batch that one Undo reverts ("" when nothing changed)

    @property
    def change(self) -> tuple[int, ...]:
        return self.fresh + self.labelled if self.relabel_labelled else self.fresh

    @property
    def target_text(self) -> str:
        return ", ".join(self.target) or "no intent"

    def summary(self) -> str:
        """One sentence for the person about to press Label.

        Example:
            >>> BulkPlan(("x",), 54, tuple(range(26)), tuple(range(28)), 5, 10, False).summary()
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
        return "; ".join(parts) + "."


def _plan(s: Any, pid: int, ids: list[int], target: list[str], relabel_labelled: bool) -> BulkPlan:
    rows = repo.rows_by_id(s, pid, list(dict.fromkeys(ids)))
    wanted = tuple(sorted(target))
    fresh = tuple(r.id for r in rows if not r.labels)
    others = [r for r in rows if r.labels and tuple(sorted(r.labels)) != wanted]
    return BulkPlan(
        wanted,
        len(rows),
        fresh if wanted else (),
        tuple(r.id for r in others),
        len({name for r in others for name in r.labels}),
        sum(r.split == "test" for r in others),
        relabel_labelled,
    )


def plan_label(
    ctx: AppContext,
    project: str,
    utterance_ids: list[int],
    labels: str | list[str] | None,
    *,
    relabel_labelled: bool = False,
) -> BulkPlan:
    """What :func:`label_many` would do, without doing it (the preview)."""
    with ctx.db.session() as s:
        pid = project_id_in(s, project)
        return _plan(s, pid, utterance_ids, parse_label_input(labels), relabel_labelled)


def label_many(
    ctx: AppContext,
    project: str,
    utterance_ids: list[int],
    labels: str | list[str] | None,
    *,
    relabel_labelled: bool = False,
    user_id: int | None = None,
    expected: tuple[int, ...] | list[int] | None = None,
) -> BulkPlan:
    """Label a selection as one batch (one Undo reverts all of it). Already labelled utterances
    are left as they are unless ``relabel_labelled``. Returns what was done.

    ``expected``: the ids the preview said would change (:attr:`BulkPlan.change` of
    :func:`plan_label`); when given, anything else is refused and nothing changes.

    Raises:
        ValueError: the rows to change are not the ``expected`` ones.
    """
    target = parse_label_input(labels)
    batch = str(uuid.uuid4())
    with ctx.db.write() as s:
        pid = project_id_in(s, project, write=True)
        plan = _plan(s, pid, utterance_ids, target, relabel_labelled)
        if expected is not None and sorted(plan.change) != sorted(expected):
            raise ValueError(
                f"The preview said {len(expected)} row(s) would change; now "
                f"{len(plan.change)} would (rows were labelled meanwhile). Preview again. "
                "Nothing was changed."
            )
        for uid in plan.change:
            repo.set_labels(s, pid, uid, target, user_id=acting_user(user_id), batch=batch)
    return dataclasses.replace(plan, batch=batch if plan.change else "")
