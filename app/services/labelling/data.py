"""The Data tab's actions: browse, add, edit and label utterances; manage intents (its history
and undo: :mod:`app.services.labelling.history`).

Every function takes the project as the request resolved it (:class:`app.access.ProjectHandle`)
and changes it only through :func:`app.access.writing`, where the item rule is asked.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from app.access import ProjectHandle, writing
from storage import projects as repo_projects
from storage import utterances as repo
from storage.db import Database, Session
from storage.deleted import delete_utterance as delete_kept
from storage.errors import NotFoundError
from storage.texts import is_blank

COLUMNS = ["id", "text", "intents", "split", "version"]


class UnconfirmedTestChange(ValueError):
    """A change to a `test` row that was not confirmed (nothing was changed)."""


def refuse_unconfirmed_test_change(
    row: repo.UtteranceRow, labels: list[str] | None, split: str | None = None
) -> None:
    """The test split reports the accuracy: changing a test row's intents or split, or deleting
    it (``labels`` None), needs a second, explicit step, or a fix that follows the model's
    opinion bends the accuracy towards the model. Each screen asks in its own way (a tick, the
    same key twice); a text edit that keeps the intents and the split is not a change of it.

    Raises:
        UnconfirmedTestChange: ``row`` is a test row and the change touches it.
    """
    if row.split != "test":
        return
    same = labels is not None and sorted(labels) == sorted(row.labels)
    if same and split in (None, "test"):
        return
    raise UnconfirmedTestChange(
        f"#{row.id} is a test utterance: changing it changes the accuracy the test split "
        "reports. Nothing was changed."
    )


def parse_label_input(value: str | list[str] | None) -> list[str]:
    """Labels typed as ``a|b`` / ``a, b`` or picked from a multiselect; ``(none)`` or nothing
    = no intent. A label of only spaces (or other invisible characters) is refused: it names
    no intent, and storing the row as "no intent" would be a change nobody asked for (issue
    56, row 8).

    Example:
        >>> parse_label_input("greet| bye "), parse_label_input(""), parse_label_input("(none)")
        (['greet', 'bye'], [], [])
        >>> parse_label_input("   ")
        Traceback (most recent call last):
        ...
        ValueError: '   ' is not an intent's name: it has nothing visible. Leave the label empty (or pick (none)) for no intent.
    """
    if value is None:
        return []
    items = value if isinstance(value, list) else value.replace(",", "|").split("|")
    blank = next((v for v in items if v and is_blank(v)), None)
    if blank is not None:
        raise ValueError(
            f"{blank!r} is not an intent's name: it has nothing visible. Leave the label empty "
            "(or pick (none)) for no intent."
        )
    return [v.strip() for v in items if v.strip() and v.strip() != "(none)"]


def table(
    db: Database,
    p: ProjectHandle,
    *,
    intent: str | None = None,
    split: str | None = None,
    search: str | None = None,
    limit: int = 2000,
) -> list[dict[str, Any]]:
    """Rows for the utterance table, filtered by intent (``(none)`` = unlabelled), split, text."""
    with db.session() as s:
        rows = repo.list_utterances(
            s, p.id, intent=intent or None, split=split or None, search=search or None, limit=limit
        )
    return [
        {
            "id": r.id,
            "text": r.text,
            "intents": "|".join(r.labels),
            "split": r.split,
            "version": r.version,
        }
        for r in rows
    ]


def intents(db: Database, p: ProjectHandle) -> list[dict[str, Any]]:
    with db.session() as s:
        return [asdict(i) for i in repo_projects.list_intents(s, p.id)]


def intent_names(db: Database, p: ProjectHandle) -> list[str]:
    with db.session() as s:
        return sorted(repo_projects.intents_by_name(s, p.id))


def add_utterance(
    db: Database,
    p: ProjectHandle,
    text: str,
    labels: str | list[str] | None = None,
    split: str = "train",
    *,
    context: str = "",
    create: bool = False,
) -> dict[str, Any]:
    """Add an utterance (``context``: the turn before it, ``""`` for none). An intent the
    project does not have is refused naming the nearest, unless ``create``
    (:mod:`storage.unknown_intents`)."""
    with writing(db, p) as s:
        row = repo.add_utterance(
            s,
            p.id,
            text,
            parse_label_input(labels),
            split=split,
            user_id=p.actor.id,
            context=context,
            create_missing_intents=create,
        )
    return asdict(row)


def label_text(
    db: Database,
    p: ProjectHandle,
    text: str,
    labels: str | list[str] | None,
    split: str = "train",
    *,
    create: bool = False,
    expected_version: int | None = None,
) -> dict[str, Any]:
    """Add a labelled utterance, or relabel it when the text is already in the project, in one
    transaction that holds the write lock: two people sending the same new text at once end with
    one row carrying the later labels, never an "already in this project" error. A label that
    names no intent of the project is refused, naming the closest ones, unless ``create`` (a
    typo would otherwise become an intent of one example). ``expected_version``: the row's
    ``version`` as the caller read it; a row changed (or deleted) since is refused, so of two
    people relabelling what they both read, the second is told instead of silently undoing the
    first.

    Raises:
        UnknownIntentError: an unknown intent and not ``create``; nothing was changed.
        ConflictError: ``expected_version`` is not the row's now; nothing was changed.
    """
    names = parse_label_input(labels)
    with writing(db, p) as s:
        existing = repo.find_by_text(s, p.id, text)
        if existing is None and expected_version is not None:
            raise repo.ConflictError(
                f"{text!r} is no longer in the project (deleted, or its text edited, since "
                "you read it); nothing was changed."
            )
        if existing is None:
            row = repo.add_utterance(
                s,
                p.id,
                text,
                names,
                split=split,
                user_id=p.actor.id,
                create_missing_intents=create,
            )
        else:
            row = repo.set_labels(
                s,
                p.id,
                existing,
                names,
                split=split or None,
                user_id=p.actor.id,
                create_missing_intents=create,
                expected_version=expected_version,
            )
    return asdict(row)


def label_in(
    s: Session,
    p: ProjectHandle,
    utterance_id: int,
    names: list[str],
    *,
    expected_version: int | None = None,
    split: str | None = None,
    text: str | None = None,
    batch: str | None = None,
    confirm_test: bool = True,
    create: bool = False,
    served: Sequence[str] | None = None,
) -> repo.UtteranceRow:
    """:func:`label_utterance` within the caller's transaction (one opened by
    :func:`app.access.writing`). ``served``: what the model that served decided on the card
    this label answers (None: no card)."""
    current = repo.get_utterance(s, p.id, utterance_id)
    if not confirm_test:
        (now,) = repo.rows_by_id(s, p.id, [utterance_id])
        refuse_unconfirmed_test_change(now, names, split or None)
    if text is not None and text.strip() != current.text:
        repo.update_utterance(
            s, p.id, utterance_id, text=text, expected_version=expected_version, user_id=p.actor.id
        )
        expected_version = None  # checked just now; the edit bumped it
    if expected_version is not None and current.version != expected_version:
        raise repo.ConflictError(
            f"Utterance #{utterance_id} was changed by someone else since you loaded it "
            f"(now: {current.text!r}); reload and try again."
        )
    return repo.set_labels(
        s,
        p.id,
        utterance_id,
        names,
        split=split or None,
        user_id=p.actor.id,
        batch=batch,
        create_missing_intents=create,
        served=served,
    )


def label_utterance(
    db: Database,
    p: ProjectHandle,
    utterance_id: int,
    labels: str | list[str] | None,
    *,
    expected_version: int | None = None,
    split: str | None = None,
    text: str | None = None,
    batch: str | None = None,
    confirm_test: bool = True,
    create: bool = False,
) -> dict[str, Any]:
    """Set an utterance's intents (and optionally its text and split) in one transaction, by the
    one labelling rule (:func:`storage.utterances.labelled_split`): an utterance that gets an
    intent leaves `unlabelled` for `train` unless `test` was chosen, so it joins the pool at once.
    Screens where one click could change a test row pass ``confirm_test`` as the person's
    explicit confirmation (:func:`refuse_unconfirmed_test_change`). An intent the project does
    not have is refused naming the nearest, unless ``create`` (:mod:`storage.unknown_intents`)."""
    names = parse_label_input(labels)
    with writing(db, p) as s:
        row = label_in(
            s,
            p,
            utterance_id,
            names,
            expected_version=expected_version,
            split=split,
            text=text,
            batch=batch,
            confirm_test=confirm_test,
            create=create,
        )
    return asdict(row)


def move_split(db: Database, p: ProjectHandle, utterance_ids: list[int], split: str) -> int:
    with writing(db, p) as s:
        for uid in utterance_ids:
            repo.update_utterance(s, p.id, uid, split=split, user_id=p.actor.id)
    return len(utterance_ids)


@dataclass(frozen=True)
class Deleted:
    """An utterance as it was when deleted, and the batch whose undo brings it back
    (:func:`app.services.labelling.history.undo_batch`)."""

    row: repo.UtteranceRow
    batch: str

    def message(self) -> str:
        r = self.row
        intents = ", ".join(r.labels) or "no intent"
        return f"Deleted #{r.id} {r.text[:60]!r} ({intents}, {r.split}); undo brings it back."


def delete_in(
    s: Session,
    p: ProjectHandle,
    utterance_id: int,
    *,
    batch: str | None = None,
    confirm_test: bool = True,
) -> repo.UtteranceRow:
    """:func:`delete_utterance` within the caller's transaction; returns the row as it was."""
    (now,) = repo.rows_by_id(s, p.id, [utterance_id])
    if not confirm_test:
        refuse_unconfirmed_test_change(now, None)
    delete_kept(s, p.id, utterance_id, user_id=p.actor.id, batch=batch)
    return now


def delete_utterance(
    db: Database,
    p: ProjectHandle,
    utterance_id: int,
    *,
    batch: str | None = None,
    confirm_test: bool = True,
) -> Deleted:
    """Delete an utterance (undo brings it back); ``confirm_test`` as in :func:`label_utterance`.

    Raises:
        NotFoundError: no such utterance in the project. UnconfirmedTestChange: a test row and
            not ``confirm_test``. PermissionError: an item the acting user may not change now
            (:mod:`app.access.policy`). Nothing is changed then.
    """
    batch = batch or str(uuid.uuid4())
    with writing(db, p) as s:
        row = delete_in(s, p, utterance_id, batch=batch, confirm_test=confirm_test)
    return Deleted(row, batch)


def utterance_id(db: Database, p: ProjectHandle, text: str) -> int:
    """The id of the project's utterance with this text (trimmed and NFC, as stored).

    Raises:
        NotFoundError: no utterance with this text in the project.
    """
    with db.session() as s:
        found = repo.find_by_text(s, p.id, text)
    if found is None:
        raise NotFoundError(f"No utterance {text[:60]!r} in this project.")
    return found


def create_intent(db: Database, p: ProjectHandle, name: str, description: str = "") -> str:
    with writing(db, p) as s:
        return repo_projects.create_intent(s, p.id, name, description).name


def describe_intent(db: Database, p: ProjectHandle, name: str, description: str) -> str:
    """Set (or clear, with an empty text) an intent's description; returns it as stored.

    Raises:
        NotFoundError: no such intent. StorageError: a bad description; nothing changed.
    """
    if not (name or "").strip():
        raise ValueError("Choose an intent to describe.")
    with writing(db, p) as s:
        return repo_projects.describe_intent(s, p.id, name, description).description


def rename_intent(db: Database, p: ProjectHandle, old: str, new: str) -> str:
    with writing(db, p) as s:
        return repo_projects.rename_intent(s, p.id, old, new).name


def merge_intents(
    db: Database, p: ProjectHandle, sources: list[str], target: str, *, create: bool = False
) -> int:
    """Merge ``sources`` into ``target``: an intent of the project, or a new one if ``create``
    (else refused naming the nearest: :mod:`storage.unknown_intents`)."""
    with writing(db, p) as s:
        return repo_projects.merge_intents(
            s, p.id, sources, target, user_id=p.actor.id, create_missing=create
        )


def delete_intent(db: Database, p: ProjectHandle, name: str) -> int:
    with writing(db, p) as s:
        return repo_projects.delete_intent(s, p.id, name, user_id=p.actor.id)
