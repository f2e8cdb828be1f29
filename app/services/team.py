"""Labelling as a team: an admin splits unlabelled utterances between annotators with a share
labelled twice (the overlap); each annotator's answer is stored apart from the utterance's
accepted label (what training, evaluation and export use); agreement is measured on the
overlap; a reviewer settles the disagreements.

The rules:

* an answer to an item only one annotator was given is accepted at once (as in single-user
  mode); a skip leaves the item unlabelled;
* an overlap item is accepted when every annotator on it gave the same answer; otherwise (one
  disagrees or skipped) it waits in the review queue until a reviewer decides;
* a reviewer's decision is a label like any other: in the audit log under its own batch, and
  undone like one (the item then waits for review again);
* the model's suggestion is shown to the reviewer, never counted as a vote;
* a project nobody was assigned in behaves exactly as before (nothing here is consulted).
"""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from app.auth import RANK, current_user_id
from app.context import AppContext
from app.services import data as data_svc
from app.services.data import project_id_in
from core.evaluation.oos import OUT_OF_SCOPE
from core.labelling.agreement import Agreement, agreement
from storage import team as repo
from storage.errors import NotFoundError, StorageError
from storage.users import active_user
from storage.utterances import list_utterances

OVERLAP_DEFAULT = 0.1
ACTIONS = repo.ANSWER_ACTIONS


@dataclass(frozen=True)
class Given:
    """One annotator's answer as a reviewer sees it."""

    annotator: str
    action: str
    intents: tuple[str, ...]

    def shown(self) -> str:
        if self.action == "label":
            return ", ".join(self.intents)
        return OUT_OF_SCOPE if self.action == "oos" else "skipped"


@dataclass(frozen=True)
class Dispute:
    """An overlap item every annotator answered and not all alike, still without a label."""

    id: int
    text: str
    answers: tuple[Given, ...]


def _answer_value(action: str, intents: Sequence[str]) -> frozenset[str] | None:
    """What agreement compares: the intents, out of scope as its own value; a skip: nothing."""
    if action == "skip":
        return None
    return frozenset([OUT_OF_SCOPE]) if action == "oos" else frozenset(intents)


def assign(
    ctx: AppContext,
    project: str,
    annotators: Sequence[str],
    *,
    overlap: float = OVERLAP_DEFAULT,
    search: str | None = None,
    limit: int | None = None,
) -> dict[str, int]:
    """Split the unlabelled utterances nobody has yet (containing ``search``; the first
    ``limit``) between ``annotators`` evenly; an ``overlap`` share of them, spread evenly, goes
    to a second annotator too (every annotator ends with the same number, give or take one). Returns annotator -> utterances given (and ``overlap`` -> how
    many went to two)."""
    names = list(dict.fromkeys(a.strip() for a in annotators if a.strip()))
    if not names:
        raise ValueError("Name at least one annotator.")
    if not 0 <= overlap <= 1:
        raise ValueError(f"The overlap is a share between 0 and 1, not {overlap:g}.")
    if overlap and len(names) < 2:
        raise ValueError("An overlap needs two annotators or more.")
    with ctx.db.write() as s:
        pid = project_id_in(s, project, write=True)
        users = []
        for name in names:
            try:
                user = active_user(s, name)
            except (NotFoundError, PermissionError) as exc:
                raise ValueError(f"{name!r} is not an active user: {exc}") from None
            if RANK[user.role] < RANK["designer"]:
                raise ValueError(f"{name} is a {user.role}: annotators need the designer role.")
            users.append(user.id)
        ids = repo.unassigned_unlabelled(s, pid, search=search, limit=limit)
        plan: dict[int, list[int]] = {}
        given = dict.fromkeys(names, 0)
        shared = 0
        n = len(names)
        for i, uid in enumerate(ids):  # whoever has the fewest so far (in turn on a tie)
            first = min(range(n), key=lambda j: (given[names[j]], (j - i) % n))
            plan[uid] = [users[first]]
            given[names[first]] += 1
            if int((i + 1) * overlap) > int(i * overlap):  # evenly spread
                others = [(first + k) % n for k in range(1, n)]  # the same for the second
                second = min(others, key=lambda j: given[names[j]])
                plan[uid].append(users[second])
                given[names[second]] += 1
                shared += 1
        repo.add_assignments(s, pid, plan)
    return {**given, "overlap": shared}


def is_team_project(ctx: AppContext, project: str) -> bool:
    """Whether anyone was assigned utterances in the project."""
    with ctx.db.session() as s:
        return bool(repo.progress(s, project_id_in(s, project)))


def open_items(ctx: AppContext, project: str, user_id: int | None = None) -> list[int]:
    """The annotator's assigned items they have not answered and nobody labelled (file order)."""
    user_id = user_id if user_id is not None else current_user_id()
    if user_id is None:
        return []
    with ctx.db.session() as s:
        return repo.open_for(s, project_id_in(s, project), user_id)


def reserved(ctx: AppContext, project: str) -> set[int]:
    """Unlabelled items assigned to someone: kept out of everyone's general queue."""
    with ctx.db.session() as s:
        return repo.reserved_ids(s, project_id_in(s, project))


def my_progress(ctx: AppContext, project: str) -> tuple[int, int] | None:
    """The current user's (assigned, still open) items; None when they have none assigned."""
    user_id = current_user_id()
    if user_id is None:
        return None
    with ctx.db.session() as s:
        pid = project_id_in(s, project)
        assigned = repo.assigned_count(s, pid, user_id)
        return (assigned, len(repo.open_for(s, pid, user_id))) if assigned else None


def progress(ctx: AppContext, project: str) -> dict[str, tuple[int, int]]:
    """Annotator -> (assigned, answered)."""
    with ctx.db.session() as s:
        return repo.progress(s, project_id_in(s, project))


def submit(
    ctx: AppContext,
    project: str,
    utterance_id: int,
    action: str,
    intents: Sequence[str] = (),
    *,
    user_id: int | None = None,
    batch: str | None = None,
) -> str:
    """Store the annotator's answer for an item assigned to them; accept it when the rules
    say so (see the module). Returns what happened, in words."""
    user_id = user_id if user_id is not None else current_user_id()
    if action not in ACTIONS:
        raise ValueError(f"Unknown answer {action!r}; use one of {', '.join(ACTIONS)}.")
    names = sorted(set(data_svc.parse_label_input(list(intents))))
    if action == "label" and not names:
        raise ValueError("Pick an intent first.")
    if OUT_OF_SCOPE in names:
        action, names = "oos", []
    with ctx.db.write() as s:
        pid = project_id_in(s, project, write=True)
        on_it = repo.assignees(s, pid, [utterance_id]).get(utterance_id, [])
        if user_id is None or user_id not in on_it:
            who = ", ".join(sorted(repo.user_names(s, on_it))) or "nobody"
            raise StorageError(
                f"#{utterance_id} is assigned to {who}, not to you: their answers decide it "
                "(or a reviewer's). Nothing was stored."
            )
        repo.save_answer(s, pid, utterance_id, user_id, action, names)
        rows = repo.answers(s, pid, [utterance_id])
        (row,) = list_utterances(s, pid, ids=[utterance_id])
    if row.split != "unlabelled":
        return f"#{utterance_id}: your answer is stored; it was labelled already."
    values = {_answer_value(r.action, r.intents) for r in rows}
    if len(rows) < len(on_it):
        return f"#{utterance_id}: your answer is stored; it waits for a second opinion."
    if None in values or len(values) > 1:
        if len(on_it) == 1:
            return f"#{utterance_id} skipped."
        return f"#{utterance_id}: the answers differ; it goes to review."
    labels = [OUT_OF_SCOPE] if action == "oos" else names
    data_svc.label_utterance(
        ctx, project, utterance_id, labels, user_id=user_id, batch=batch or str(uuid.uuid4())
    )
    agreed = " (everyone agreed)" if len(on_it) > 1 else ""
    return f"#{utterance_id} → {', '.join(labels)}{agreed}."


def annotators_of(ctx: AppContext, project: str, utterance_id: int) -> list[int]:
    """The ids of the users asked to label the utterance (none: not a team item)."""
    with ctx.db.session() as s:
        return repo.assignees(s, project_id_in(s, project), [utterance_id]).get(utterance_id, [])


def withdraw(ctx: AppContext, project: str, utterance_id: int, batch: str | None) -> bool:
    """Take back the current user's answer to an item assigned to them (the queue's undo) and
    the label it made, if any. False when they have no answer there (nothing done)."""
    user_id = current_user_id()
    with ctx.db.write() as s:
        pid = project_id_in(s, project, write=True)
        if user_id is None or not repo.delete_answer(s, pid, utterance_id, user_id):
            return False
    if batch is not None:  # NotFoundError: the answer labelled nothing (it waits, or was done)
        with contextlib.suppress(NotFoundError):
            data_svc.undo_batch(ctx, project, batch)
    return True


def disputes(ctx: AppContext, project: str) -> list[Dispute]:
    """The review queue: overlap items every annotator answered, not all alike, and still
    unlabelled, in file order."""
    with ctx.db.session() as s:
        pid = project_id_in(s, project)
        overlap = repo.overlap_ids(s, pid)
        rows = {r.id: r for r in list_utterances(s, pid, ids=overlap) if r.split == "unlabelled"}
        on = repo.assignees(s, pid, list(rows))
        given: dict[int, list[repo.AnswerRow]] = {}
        for a in repo.answers(s, pid, list(rows)):
            given.setdefault(a.utterance_id, []).append(a)
    out = []
    for uid, row in rows.items():
        found = given.get(uid, [])
        if len(found) < len(on.get(uid, [])):
            continue
        if len({_answer_value(a.action, a.intents) for a in found} - {None}) > 1 or any(
            a.action == "skip" for a in found
        ):
            answers = tuple(Given(a.annotator, a.action, a.intents) for a in found)
            out.append(Dispute(uid, row.text, answers))
    return out


def decide(
    ctx: AppContext,
    project: str,
    utterance_id: int,
    intents: Sequence[str],
    *,
    batch: str | None = None,
) -> str:
    """The reviewer's decision for a disputed item: its accepted label (audited under its own
    batch; undone like any label). ``intents`` = ``[out_of_scope]`` for out of scope."""
    names = data_svc.parse_label_input(list(intents))
    if not names:
        raise ValueError("Pick an answer or an intent first.")
    if utterance_id not in {d.id for d in disputes(ctx, project)}:
        raise StorageError(f"#{utterance_id} is not waiting for review; nothing was changed.")
    row = data_svc.label_utterance(
        ctx, project, utterance_id, names, batch=batch or str(uuid.uuid4())
    )
    return f"#{utterance_id} → {', '.join(row['labels'])} (reviewed)."


def measure(ctx: AppContext, project: str) -> Agreement:
    """Agreement on the overlap items (every answer given so far, skips left out)."""
    with ctx.db.session() as s:
        pid = project_id_in(s, project)
        overlap = repo.overlap_ids(s, pid)
        rows = repo.answers(s, pid, overlap)
    given: dict[int, dict[str, frozenset[str]]] = {}
    for a in rows:
        value = _answer_value(a.action, a.intents)
        if value is not None:
            given.setdefault(a.utterance_id, {})[a.annotator] = value
    return agreement(given)


def export_answers(ctx: AppContext, project: str, out: Path) -> Path:
    """Every annotator's answer, one JSON object per line (with the item's accepted intents
    now): the raw annotations."""
    with ctx.db.session() as s:
        pid = project_id_in(s, project)
        rows = repo.answers(s, pid)
        items = {
            r.id: r for r in list_utterances(s, pid, ids=sorted({a.utterance_id for a in rows}))
        }
    with out.open("w", encoding="utf-8") as f:
        for a in rows:
            item = items.get(a.utterance_id)
            record: dict[str, Any] = {
                "id": a.utterance_id,
                "text": item.text if item else "",
                "annotator": a.annotator,
                "answer": a.action,
                "intents": [OUT_OF_SCOPE] if a.action == "oos" else list(a.intents),
                "answered_at": a.answered_at.isoformat(timespec="seconds"),
                "accepted": list(item.labels) if item and item.split != "unlabelled" else None,
            }
            f.write(json.dumps(record, ensure_ascii=False) + "\n")
    return out


def items(ctx: AppContext, project: str, ids: Sequence[int]) -> list[dict[str, Any]]:
    """The utterances ``ids`` as ``{id, text, labels, split}``, in the order given (unknown ids
    left out): what the REST API shows of an annotator's items."""
    with ctx.db.session() as s:
        rows = list_utterances(s, project_id_in(s, project), ids=list(ids))
    found = {r.id: r for r in rows}
    return [
        {"id": i, "text": found[i].text, "labels": list(found[i].labels), "split": found[i].split}
        for i in ids
        if i in found
    ]


def annotator_choices(ctx: AppContext) -> list[str]:
    """Active users who may label (designers and admins): who can be assigned."""
    from storage.users import list_users

    with ctx.db.session() as s:
        return [
            u.name
            for u in list_users(s)
            if u.status == "active" and RANK.get(u.role, 0) >= RANK["designer"]
        ]


def overview(ctx: AppContext, project: str, examples: int = 3) -> dict[str, Any]:
    """What the Team view and the report show: ``progress`` rows, ``agreement``
    (:class:`~core.labelling.agreement.Agreement`), ``waiting`` (disagreements to review now)
    and ``intents`` rows (lowest agreement first, with up to ``examples`` disputed texts)."""
    found = measure(ctx, project)
    waiting = len(disputes(ctx, project))
    with ctx.db.session() as s:
        pid = project_id_in(s, project)
        ids = sorted({i for r in found.intents for i in r.disputed[:examples]})
        texts = {r.id: r.text for r in list_utterances(s, pid, ids=ids)}
    progress_rows = [
        {"annotator": who, "assigned": n, "answered": done, "left": n - done}
        for who, (n, done) in progress(ctx, project).items()
    ]
    intents = [
        {
            "intent": r.intent,
            "items": r.items,
            "agreement": r.value,
            "statistic": "κ" if r.statistic == "kappa" else "α",
            "disputed": len(r.disputed),
            "examples": [texts[i] for i in r.disputed[:examples] if i in texts],
        }
        for r in found.intents
        if r.disputed
    ]
    return {"progress": progress_rows, "agreement": found, "waiting": waiting, "intents": intents}


def report_view(ctx: AppContext, project: str) -> dict[str, Any] | None:
    """The stakeholder report's plain data (:func:`app.report.team.agreement_section`); None
    when nobody was assigned in the project."""
    if not is_team_project(ctx, project):
        return None
    view = overview(ctx, project)
    found: Agreement = view["agreement"]
    return {
        "items": found.items,
        "disputed": len(found.disputed),
        "alpha": found.alpha,
        "pairs": [asdict(p) for p in found.pairs],
        "intents": view["intents"],
    }
