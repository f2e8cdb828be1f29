"""A deleted utterance kept whole, so that the undo of its delete brings the same row back: the
delete keeps, on each of the utterance's events, its id (``label_events.gone_id``, while it is
deleted) and on the delete event the rest of the row (``label_events.kept``: context, entity
spans, creation time); the restore puts the row back under that id with its history linked to
it again (issue 47, item 6: links, notes and exports cite an utterance by its id)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Protocol

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from storage import guard
from storage.errors import ConflictError
from storage.label_rules import log_event, resolve_intents
from storage.projects import _labels_of
from storage.tables import Label, LabelEvent, Utterance
from storage.utterances import get_utterance


class Gone(Protocol):
    """A delete event as the undo reads it (:class:`storage.audit.Event`)."""

    @property
    def id(self) -> int: ...
    @property
    def utterance_text(self) -> str: ...
    @property
    def before(self) -> list[str]: ...
    @property
    def split_before(self) -> str | None: ...
    @property
    def gone_id(self) -> int | None: ...
    @property
    def kept(self) -> dict[str, Any] | None: ...


def delete_utterance(
    s: Session,
    project_id: int,
    utterance_id: int,
    *,
    user_id: int | None = None,
    batch: str | None = None,
) -> None:
    """Delete an utterance. Its event keeps the text, labels, split and the rest of the row
    (context, entity spans, creation time), and every event of the utterance keeps its id
    (``gone_id``), so an undo brings the same row back under the same id, its history linked
    to it again (:func:`storage.audit.undo_batch`)."""
    u = get_utterance(s, project_id, utterance_id)
    guard.check(s, project_id, [u.id])
    labels = _labels_of(s, [u.id])[u.id]
    s.execute(
        update(LabelEvent)
        .where(LabelEvent.project_id == project_id, LabelEvent.utterance_id == u.id)
        .values(gone_id=u.id)
    )
    event = log_event(s, u, labels, [], "delete", user_id, batch, split_before=u.split)
    event.gone_id = u.id
    event.kept = {
        "context": u.context,
        "entities": list(u.entities or []),
        "created_at": u.created_at.isoformat() if u.created_at else None,
    }
    s.flush()
    s.delete(u)
    s.flush()


def restore(s: Session, project_id: int, ev: Gone, user_id: int | None, batch: str) -> None:
    """Bring back a deleted utterance as it was: under its own id (links, notes and exports that
    cite it resolve again), with its intents, split, context, entity spans and creation time,
    and its earlier events linked to it again. Only where SQLite gave that id to an utterance
    added since (it reuses the highest id once freed) does it come back under a new one."""
    if s.scalar(
        select(Utterance.id).where(
            Utterance.project_id == project_id, Utterance.text == ev.utterance_text
        )
    ):
        raise ConflictError(
            f"The utterance {ev.utterance_text!r} was added again since it was deleted. "
            "Nothing was changed."
        )
    kept = ev.kept or {}
    u = Utterance(
        project_id=project_id,
        text=ev.utterance_text,
        split=ev.split_before or "train",
        context=kept.get("context") or "",
        entities=list(kept.get("entities") or []),
    )
    if kept.get("created_at"):
        u.created_at = datetime.fromisoformat(kept["created_at"])
    own = ev.gone_id
    if own is not None and s.get(Utterance, own) is None:
        u.id = own
    s.add(u)
    s.flush()
    names = []
    for intent in resolve_intents(s, project_id, ev.before, create_missing=True):
        s.add(Label(utterance_id=u.id, intent_id=intent.id))
        names.append(intent.name)
    if own is not None:  # its history, up to the delete, is this utterance's again
        # (not that of an earlier utterance, still deleted, that had the same id: SQLite reuses
        # the highest id once freed; its delete ends its history)
        earlier = s.scalar(
            select(func.max(LabelEvent.id)).where(
                LabelEvent.project_id == project_id,
                LabelEvent.gone_id == own,
                LabelEvent.action == "delete",
                LabelEvent.undone.is_(False),
                LabelEvent.id < ev.id,
            )
        )
        s.execute(
            update(LabelEvent)
            .where(
                LabelEvent.project_id == project_id,
                LabelEvent.gone_id == own,
                LabelEvent.utterance_id.is_(None),
                LabelEvent.id <= ev.id,
                LabelEvent.id > (earlier or 0),
            )
            .values(utterance_id=u.id, gone_id=None)
            .execution_options(synchronize_session=False)
        )
    s.execute(
        update(LabelEvent).where(LabelEvent.id == ev.id).values(utterance_id=u.id, gone_id=None)
    )
    log_event(s, u, [], names, "undo", user_id, batch, None, u.split)
    s.flush()
