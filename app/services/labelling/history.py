"""A project's history: its recent changes (one row per batch) and their undo.

An undo takes back a whole batch (a bulk label, an import, a merge). A long batch is taken back
in short transactions, as it was written (:mod:`app.services.labelling.bulk`), so others keep saving
meanwhile (issue 45 row 5); each goes through :func:`app.access.writing`, where the item rule
decides what the acting user may take back.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from app.access import ProjectHandle, writing
from storage import audit
from storage.db import Database, Session
from storage.errors import StorageError
from storage.job_history import recent_jobs

# Events an undo takes back in one transaction: a long batch (a bulk label, an import) is taken
# back in several short ones, as it was written (app.services.labelling.bulk), so others keep saving.
UNDO_CHUNK = 2000
UNDO_PAUSE_S = 0.12  # between two of them: a bit longer than SQLite's busy handler's 100 ms


def _undone_message(n: int, first: tuple[str, list[str], str] | None) -> str:
    if first is None or not n:
        return "Nothing to undo."
    action, before, text = first
    if n > 1:
        return f"Undid {action} of {n} utterance(s)."
    back = ", ".join(before) or "no intent"
    return f"Undid {action} of {text[:60]!r}: back to {back}."


def _summary(events: list[Any]) -> tuple[str, list[str], str] | None:
    return (events[0].action, list(events[0].before), events[0].utterance_text) if events else None


def undo(db: Database, p: ProjectHandle) -> str:
    """Undo the last change still in effect (a whole batch, e.g. a merge). Says what was undone."""
    return _undo(db, p, None)


def undo_in(s: Session, p: ProjectHandle, batch: str) -> str:
    """:func:`undo_batch` within the caller's transaction (one, whatever the batch's size)."""
    events = audit.undo_batch(s, p.id, batch.strip(), user_id=p.actor.id)
    return _undone_message(len(events), _summary(events))


def undo_batch(db: Database, p: ProjectHandle, batch: str) -> str:
    """Undo one earlier change (a batch from :func:`activity`), if later edits did not touch it."""
    return _undo(db, p, batch.strip())


def _undo(db: Database, p: ProjectHandle, batch: str | None) -> str:
    """Undo ``batch`` (None: the last change still in effect) in transactions of at most
    :data:`UNDO_CHUNK` events: the first checks that it can be undone and takes back the newest;
    each next one the next newest. An undo stopped half-way (a crash, kill -9) leaves each row
    either back or as it was, and undoing the same change again takes back the rest."""
    undo_id = str(uuid.uuid4())
    with writing(db, p) as s:
        batch = batch if batch is not None else audit.last_batch(s, p.id)
        if batch is None:
            return "Nothing to undo."
        events = audit.undo_batch(
            s, p.id, batch, user_id=p.actor.id, limit=UNDO_CHUNK, undo=undo_id
        )
        n, first, left = len(events), _summary(events), audit.pending(s, p.id, batch)
    while left:
        time.sleep(UNDO_PAUSE_S)
        try:
            with writing(db, p) as s:
                events = audit.undo_batch(
                    s, p.id, batch, user_id=p.actor.id, limit=UNDO_CHUNK, undo=undo_id
                )
                n, left = n + len(events), audit.pending(s, p.id, batch)
        except (StorageError, PermissionError) as exc:
            raise type(exc)(
                f"{exc} The undo stopped after {n} of {n + left} change(s); undo the same "
                "change again to take back the rest."
            ) from exc
    return _undone_message(n, first)


# "intents" last: the CLI prints these columns in this order, and scripts read them by place
ACTIVITY_COLUMNS = ["when", "user", "action", "rows", "example", "state", "batch", "intents"]


def clipped(text: str, width: int = 80) -> str:
    """``text`` in at most ``width`` characters: cut after its last whole word that fits (mid-word
    only when one word is longer than 20 characters), an ellipsis saying so.

    Example:
        >>> clipped("I would like a refund of my order", 20)
        'I would like a …'
        >>> clipped("short", 20), clipped("x" * 30, 20)
        ('short', 'xxxxxxxxxxxxxxxxxxx…')
    """
    if len(text) <= width:
        return text
    cut = text[: width - 1]
    space = cut.rfind(" ")
    return (cut[: space + 1] if space > 0 and len(cut) - space <= 20 else cut) + "…"


def intents_words(action: str, before: Sequence[str], after: Sequence[str]) -> str:
    """What an action did to its example's intents, in the Activity table's words: the intent
    given, the move from one to another, or the intent a deleted utterance had ("" where its
    intents stayed as they were: a split moved, say).

    Example:
        >>> intents_words("label", [], ["card_arrival"])
        'card_arrival'
        >>> intents_words("merge", ["card_lost"], ["lost_or_stolen_card"])
        'card_lost → lost_or_stolen_card'
        >>> intents_words("label", ["refund", "balance"], [])
        'refund, balance → no intent'
        >>> intents_words("delete", ["refund"], []), intents_words("split", ["refund"], ["refund"])
        ('refund', '')
    """
    if sorted(before) == sorted(after):
        return ""
    was, now = ", ".join(before), ", ".join(after)
    if action == "delete":
        return was
    return f"{was} → {now or 'no intent'}" if was else now


def activity(db: Database, p: ProjectHandle, limit: int = 100) -> list[dict[str, Any]]:
    """The project's recent changes, newest first, one row per batch (an action on many
    utterances is one row), with whether it can still be undone (``state`` in words,
    ``undoable``), and its retrains among them (``retrain``, ``retrain (auto)``: a rollback in
    the Train tab's Versions undoes one)."""
    from storage.users import list_users

    with db.session() as s:
        users = {u.id: u.name for u in list_users(s)}
        batches = audit.recent_batches(s, p.id, limit)
        retrains = recent_jobs(s, p.id, limit)
    changes: list[dict[str, Any]] = [
        {
            "when": b.created_at.strftime("%Y-%m-%d %H:%M:%S"),
            "user": users.get(b.user_id or -1, "local"),
            "action": b.action,
            "rows": b.size,
            "example": clipped(b.example),
            "intents": intents_words(b.action, b.before, b.after),
            "state": (
                "undone" if b.undone else "can be undone" if b.undoable else b.blocked_by or "kept"
            ),
            "batch": b.id,
            "undoable": b.undoable,
        }
        for b in batches
    ]
    # the retrains beside them (an automatic one says so): undone by a rollback in Versions
    jobs: list[dict[str, Any]] = [
        {
            "when": (j.created or datetime.min).strftime("%Y-%m-%d %H:%M:%S"),
            "user": "auto" if j.trigger == "auto" else users.get(j.user_id or -1, "local"),
            "action": "retrain (auto)" if j.trigger == "auto" else "retrain",
            "rows": None,
            "example": clipped(_version_said(j.model_version_id, j.message)),
            "intents": "",
            "state": j.status if j.status != "succeeded" else "roll back in Train → Versions",
            "batch": "",
            "undoable": False,
        }
        for j in retrains
    ]
    return sorted(changes + jobs, key=lambda r: str(r["when"]), reverse=True)[:limit]


def _version_said(version_id: int | None, message: str) -> str:
    """A retrain's message led by its version, named once (the message of one that served
    already begins with it: "v2: v2: accuracy …" before)."""
    if version_id is None or message.startswith(f"v{version_id}:"):
        return message
    return f"v{version_id}: {message}"
