"""Utterances and their labels, one at a time: read, listed, added, labelled, edited; each change
writes its audit event (the rules every label writer shares: :mod:`storage.label_rules`; undo:
:mod:`storage.audit`; bulk imports: :mod:`storage.imports`)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Select, delete, func, select
from sqlalchemy.orm import Session

from storage import guard
from storage.by_id import labels_of, utterances_by_id
from storage.capacity import check_row_room
from storage.errors import ConflictError, NotFoundError, StorageError
from storage.label_rules import labelled_split, log_event, resolve_intents
from storage.projects import _labels_of
from storage.slices import SLICE, slices
from storage.slots import moved_entities
from storage.tables import Intent, Label, Utterance, utcnow
from storage.texts import MAX_TEXT_CHARS as MAX_TEXT_CHARS
from storage.texts import is_blank as is_blank
from storage.texts import validate_context, validate_split, validate_text


@dataclass(frozen=True)
class UtteranceRow:
    """A plain view of an utterance with its labels (sorted intent names)."""

    id: int
    text: str
    split: str
    labels: tuple[str, ...]
    version: int = 1
    context: str = ""


@dataclass(frozen=True)
class NewUtterance:
    text: str
    labels: tuple[str, ...] = ()
    split: str = "train"
    context: str = ""


def _row(u: Utterance, labels: Sequence[str]) -> UtteranceRow:
    return UtteranceRow(u.id, u.text, u.split, tuple(sorted(labels)), u.version, u.context)


def find_by_text(s: Session, project_id: int, text: str) -> int | None:
    """The id of the project's utterance with this text (as stored: trimmed), or None."""
    return s.scalar(
        select(Utterance.id).where(
            Utterance.project_id == project_id, Utterance.text == validate_text(text)
        )
    )


def get_utterance(s: Session, project_id: int, utterance_id: int) -> Utterance:
    u = s.get(Utterance, utterance_id)
    if u is None or u.project_id != project_id:
        raise NotFoundError(f"No utterance #{utterance_id} in this project.")
    return u


def _filtered(
    project_id: int,
    *,
    intent: str | None = None,
    split: str | None = None,
    search: str | None = None,
    ids: Iterable[int] | None = None,
) -> Select[Any]:
    """The ids of the project's utterances that pass the filters (see :func:`list_utterances`)."""
    q = select(Utterance.id).where(Utterance.project_id == project_id)
    if split:
        q = q.where(Utterance.split == split)
    if search:
        q = q.where(func.lower(Utterance.text).contains(search.lower(), autoescape=True))
    if ids is not None:
        q = q.where(Utterance.id.in_(list(ids)))
    if intent == "(none)":
        q = q.where(~Utterance.labels.any())
    elif intent:
        q = q.where(
            Utterance.id.in_(
                select(Label.utterance_id)
                .join(Intent, Intent.id == Label.intent_id)
                .where(Intent.project_id == project_id, Intent.name == intent)
            )
        )
    return q


def list_utterances(
    s: Session,
    project_id: int,
    *,
    intent: str | None = None,
    split: str | None = None,
    search: str | None = None,
    ids: Iterable[int] | None = None,
    limit: int | None = None,
    offset: int = 0,
) -> list[UtteranceRow]:
    """Utterances with their labels, in id order, filtered by intent name (``"(none)"`` = no
    label), split and a case-insensitive substring; ``offset``/``limit`` page through them.
    Any number of ``ids`` (in slices: no query binds a variable per row)."""
    if ids is not None:
        ids = list(dict.fromkeys(ids))
    if ids is not None and len(ids) > SLICE:
        rows = [
            row
            for part in slices(ids)
            for row in list_utterances(
                s, project_id, intent=intent, split=split, search=search, ids=part
            )
        ]
        rows.sort(key=lambda r: r.id)
        return rows[offset : offset + limit if limit else None]
    wanted = _filtered(project_id, intent=intent, split=split, search=search, ids=ids)
    q = (
        select(Utterance.id, Utterance.text, Utterance.split, Utterance.version, Utterance.context)
        .where(Utterance.id.in_(wanted))
        .order_by(Utterance.id)
    )
    if offset:
        q = q.offset(offset)
    if limit:
        q = q.limit(limit)
    found = s.execute(q).all()  # plain rows, not ORM objects: 5,000 candidates in a few ms
    labels = _labels_of(s, [r.id for r in found]) if found else {}
    return [
        UtteranceRow(r.id, r.text, r.split, tuple(labels.get(r.id, ())), r.version, r.context)
        for r in found
    ]


def filtered_ids(
    s: Session,
    project_id: int,
    *,
    intent: str | None = None,
    split: str | None = None,
    search: str | None = None,
) -> list[int]:
    """The ids of every utterance :func:`list_utterances` would list with these filters."""
    q = _filtered(project_id, intent=intent, split=split, search=search).order_by(Utterance.id)
    return list(s.scalars(q))


def count_utterances(
    s: Session,
    project_id: int,
    *,
    intent: str | None = None,
    split: str | None = None,
    search: str | None = None,
) -> int:
    """How many utterances :func:`list_utterances` would list with these filters and no limit."""
    wanted = _filtered(project_id, intent=intent, split=split, search=search).subquery()
    return int(s.scalar(select(func.count()).select_from(wanted)) or 0)


def count_with_context(s: Session, project_id: int) -> int:
    """How many of the project's utterances carry a context (the turn before them)."""
    q = select(func.count(Utterance.id)).where(
        Utterance.project_id == project_id, Utterance.context.is_not(None), Utterance.context != ""
    )
    return int(s.scalar(q) or 0)


def rows_by_id(s: Session, project_id: int, ids: Sequence[int]) -> list[UtteranceRow]:
    """The project's utterances with these ids, in the order given (unknown ids refused): a few
    statements for any number of ids (:mod:`storage.by_id`)."""
    cols = (Utterance.text, Utterance.split, Utterance.version, Utterance.context)
    found = utterances_by_id(s, project_id, ids, *cols)
    missing = next((i for i in ids if i not in found), None)
    if missing is not None:
        raise NotFoundError(f"No utterance #{missing} in this project.")
    labels = labels_of(s, ids)
    return [
        UtteranceRow(i, r.text, r.split, tuple(labels[i]), r.version, r.context)
        for i, r in ((i, found[i]) for i in ids)
    ]


def labelled_pool(s: Session, project_id: int, split: str = "train") -> list[UtteranceRow]:
    """The utterances of ``split`` that carry at least one label: the k-NN classifier's pool."""
    rows = s.execute(
        select(Utterance.id, Utterance.text, Utterance.version, Utterance.context, Intent.name)
        .join(Label, Label.utterance_id == Utterance.id)
        .join(Intent, Intent.id == Label.intent_id)
        .where(Utterance.project_id == project_id, Utterance.split == split)
        .order_by(Utterance.id)
    ).all()
    grouped: dict[int, tuple[str, int, str, list[str]]] = {}
    for uid, text, version, context, name in rows:
        grouped.setdefault(uid, (text, version, context, []))[3].append(name)
    return [
        UtteranceRow(uid, text, split, tuple(sorted(names)), version, context)
        for uid, (text, version, context, names) in grouped.items()
    ]


def label_counts(s: Session, project_id: int, split: str = "train") -> tuple[int, int]:
    """How many utterances of ``split`` carry two or more labels, and how many carry at least
    one (:func:`labelled_pool`'s rows), counted by the database: the multi-label rule's counts
    (:func:`core.multilabel.rule.is_multilabel_count`) without reading the pool."""
    per_row = (
        select(func.count(Label.intent_id).label("n"))
        .join(Utterance, Utterance.id == Label.utterance_id)
        .where(Utterance.project_id == project_id, Utterance.split == split)
        .group_by(Label.utterance_id)
        .subquery()
    )
    two, one = s.execute(
        select(func.count().filter(per_row.c.n > 1), func.count()).select_from(per_row)
    ).one()
    return int(two or 0), int(one or 0)


def replace_labels(s: Session, u: Utterance, intents: Sequence[Intent]) -> None:
    """Give ``u`` exactly these intents (a statement, not the cached collection, so several
    changes to one utterance in one session all count)."""
    s.execute(delete(Label).where(Label.utterance_id == u.id))
    s.add_all(Label(utterance_id=u.id, intent_id=i.id) for i in intents)
    s.flush()
    s.expire(u, ["labels"])


def add_utterance(
    s: Session,
    project_id: int,
    text: str,
    labels: Sequence[str] = (),
    *,
    split: str = "train",
    context: str = "",
    user_id: int | None = None,
    create_missing_intents: bool = True,
) -> UtteranceRow:
    text = validate_text(text)
    split = labelled_split(validate_split(split), labels)
    if s.scalar(
        select(Utterance.id).where(Utterance.project_id == project_id, Utterance.text == text)
    ):
        raise StorageError(f"The utterance {text!r} is already in this project.")
    check_row_room(s, project_id, 1)
    intents = resolve_intents(s, project_id, labels, create_missing=create_missing_intents)
    u = Utterance(project_id=project_id, text=text, split=split, context=validate_context(context))
    s.add(u)
    s.flush()
    for intent in intents:
        s.add(Label(utterance_id=u.id, intent_id=intent.id))
    names = [i.name for i in intents]
    log_event(s, u, [], names, "add", user_id, split_after=split)
    s.flush()
    return _row(u, names)


def set_labels(
    s: Session,
    project_id: int,
    utterance_id: int,
    labels: Sequence[str],
    *,
    split: str | None = None,
    user_id: int | None = None,
    expected_version: int | None = None,
    create_missing_intents: bool = True,
    batch: str | None = None,
    served: Sequence[str] | None = None,
) -> UtteranceRow:
    """Replace an utterance's labels (empty = no intent), moving it by :func:`labelled_split`
    (``split`` = the split the person chose, if any). One event for audit and undo: an undo puts
    back the labels and the split together. ``served``: what the model that served decided for
    it on the card the label answered (recorded with the event; None: not known)."""
    u = get_utterance(s, project_id, utterance_id)
    _check_version(u, expected_version)
    intents = resolve_intents(s, project_id, labels, create_missing=create_missing_intents)
    before = _labels_of(s, [u.id])[u.id]
    after = sorted(i.name for i in intents)
    split_before, split_after = u.split, labelled_split(u.split, after, split)
    moved = split_before != split_after
    if before == after and not moved:
        return _row(u, after)
    guard.check(s, project_id, [u.id])
    replace_labels(s, u, intents)
    u.split = split_after
    u.updated_at = utcnow()  # bumps the version column: concurrent editors see the change
    shown = (split_before, split_after) if moved else (None, None)
    log_event(s, u, before, after, "label", user_id, batch, shown[0], shown[1], served)
    s.flush()
    return _row(u, after)


def update_utterance(
    s: Session,
    project_id: int,
    utterance_id: int,
    *,
    text: str | None = None,
    split: str | None = None,
    user_id: int | None = None,
    expected_version: int | None = None,
    batch: str | None = None,
) -> UtteranceRow:
    u = get_utterance(s, project_id, utterance_id)
    _check_version(u, expected_version)
    split_before = u.split
    if (text is not None and validate_text(text) != u.text) or (
        split is not None and split != u.split
    ):
        guard.check(s, project_id, [u.id])
    if text is not None:
        text = validate_text(text)
        clash = s.scalar(
            select(Utterance.id).where(
                Utterance.project_id == project_id, Utterance.text == text, Utterance.id != u.id
            )
        )
        if clash:
            raise StorageError(f"The utterance {text!r} is already in this project.")
        u.entities = moved_entities(u.text, text, u.entities or [])
        u.text = text
    labels = _labels_of(s, [u.id])[u.id]
    if split is not None:
        if labelled_split(u.split, labels, split) != split:
            raise StorageError(
                f"Utterance #{u.id} has intents ({', '.join(labels)}): an utterance with intents "
                "is never `unlabelled`. Remove its intents first. Nothing was changed."
            )
        u.split = split
    s.flush()
    if split is not None and split != split_before:
        log_event(s, u, labels, labels, "split", user_id, batch, split_before, u.split)
    s.flush()
    return _row(u, labels)


def _check_version(u: Utterance, expected: int | None) -> None:
    if expected is not None and u.version != expected:
        raise ConflictError(
            f"Utterance #{u.id} was changed by someone else since you loaded it "
            f"(now: {u.text!r}); reload and try again."
        )
