"""The rules of who may do what, in one place, as plain functions of plain data:

* :func:`project_role`: a user's role in a project (admins everywhere; anyone else through
  their membership, never above their own role; None: they do not see the project);
* :func:`team_state` and :func:`item_refusal`: who may change an item now. An item nobody was
  asked to label is anyone's with the designer role. An item given to annotators (a team's) is
  *open* until each answered: only they answer it; *disputed* when two or more answered
  differently (or one skipped): a reviewer who did not answer it decides; *accepted* once it has
  its label: answers are final and only an admin changes it. An item whose annotators are done
  without making it accepted or disputed (one annotator skipped it) is *released*: anyone's again.
  Taking back one's own change (an undo of one's own batch) is always one's own to do;
* :class:`ItemPolicy`: the rule as :mod:`storage.guard` asks it, for every change of an item
  through any door (Label and Data tabs, bulk labels, the Map's lasso, Design fixes, REST, team
  routes, imports that relabel, undo).

Example:
    >>> item = TeamItem(7, "unlabelled", ((1, "ana"), (2, "ben")), {1: ("label", ("a",))})
    >>> team_state(item), item_refusal(3, "designer", item, "edit")
    ('open', '#7 is assigned to ana and ben: their answers decide it (a reviewer settles a disagreement).')
    >>> item_refusal(2, "designer", item, "answer") is None, item_refusal(3, "admin", item, "edit")
    (True, None)
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from core.retrieval.scope import OUT_OF_SCOPE
from storage.db import Session
from storage.team import TeamItem, team_items
from storage.users import ROLES

RANK = {role: i for i, role in enumerate(ROLES)}
# What a change of an item is for: a direct change (edit), an annotator's answer being accepted
# (answer), a reviewer's decision on a dispute (decide).
PURPOSES = ("edit", "answer", "decide")


def project_role(user_role: str, is_local: bool, member_role: str | None) -> str | None:
    """A user's role in a project: ``admin`` for an admin (and the local user of single-user
    mode), else their membership's role capped at their own; None when they are no member.

    Example:
        >>> project_role("admin", False, None), project_role("designer", False, "viewer")
        ('admin', 'viewer')
        >>> project_role("viewer", False, "designer"), project_role("designer", False, None)
        ('viewer', None)
    """
    if is_local or user_role == "admin":
        return "admin"
    if member_role is None:
        return None
    return min(user_role, member_role, key=lambda r: RANK.get(r, -1))


def answer_value(action: str, intents: Sequence[str]) -> frozenset[str] | None:
    """What agreement compares of an answer: its intents, out of scope as a value of its own;
    a skip: nothing."""
    if action == "skip":
        return None
    return frozenset([OUT_OF_SCOPE]) if action == "oos" else frozenset(intents)


def team_state(item: TeamItem) -> str:
    """``accepted`` (it has its label), ``open`` (an annotator has not answered), ``disputed``
    (two or more answered, not all alike, or one skipped), ``released`` (its annotators are done
    without either: a single annotator's skip, or agreement whose label was undone)."""
    if item.split != "unlabelled":
        return "accepted"
    asked = [user for user, _ in item.assignees]
    given = [item.answers[u] for u in asked if u in item.answers]
    if len(given) < len(asked):
        return "open"
    values = {answer_value(action, intents) for action, intents in given}
    if len(asked) > 1 and (len(values - {None}) > 1 or None in values):
        return "disputed"
    return "released"


def _names(item: TeamItem) -> str:
    names = [name for _, name in item.assignees]
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def item_refusal(
    actor_id: int | None,
    role: str,
    item: TeamItem | None,
    purpose: str = "edit",
    undo_of: Collection[int | None] | None = None,
) -> str | None:
    """Why the user (``actor_id`` with ``role`` in the project) may not make a change for
    ``purpose`` to ``item`` now (None: they may). ``item`` is None for an utterance nobody was
    asked to label; ``undo_of`` the authors of the changes an undo takes back."""
    if RANK.get(role, -1) < RANK["designer"]:
        return f"Changes need the designer role; you are a {role} in this project."
    if undo_of is not None and actor_id is not None and set(undo_of) == {actor_id}:
        return None  # taking back one's own change
    if item is None:
        return None if purpose == "edit" else f"Nobody was asked to label this item ({purpose})."
    state, who, mine = team_state(item), _names(item), actor_id in dict(item.assignees)
    if purpose == "answer":
        if not mine:
            return f"#{item.id} is assigned to {who}, not to you."
        if state == "accepted":
            return f"#{item.id} was accepted already: answers are final once an item is accepted."
        return None
    if purpose == "decide":
        if state != "disputed":
            return f"#{item.id} is not waiting for review."
        if mine:
            return f"#{item.id}: you answered it, so another reviewer decides it."
        return None
    if role == "admin" or state == "released":
        return None
    if state == "open":
        return (
            f"#{item.id} is assigned to {who}: their answers decide it (a reviewer settles a "
            "disagreement)."
        )
    if state == "disputed":
        return (
            f"#{item.id} waits for review ({who} answered differently): a reviewer who did not "
            "answer it decides it (Label tab, order 'Disagreements to review')."
        )
    return f"#{item.id} was accepted from the answers of {who}: only an admin can change it now."


@dataclass(frozen=True)
class ItemPolicy:
    """:func:`item_refusal` for one user and purpose, as :mod:`storage.guard` asks it."""

    actor_id: int | None
    role: str
    purpose: str = "edit"

    def refused(
        self,
        s: Session,
        project_id: int,
        utterance_ids: Sequence[int],
        undo_of: Collection[int | None] | None = None,
    ) -> dict[int, str]:
        items = team_items(s, project_id, utterance_ids)
        out: dict[int, str] = {}
        for uid in utterance_ids:
            why = item_refusal(self.actor_id, self.role, items.get(uid), self.purpose, undo_of)
            if why is not None:
                out[uid] = why
        return out
