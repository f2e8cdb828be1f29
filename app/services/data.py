"""The Data tab's actions: browse, add, edit and label utterances; manage intents; undo."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from app.auth import current_user_id
from app.context import AppContext
from storage import audit
from storage import projects as repo_projects
from storage import utterances as repo
from storage.projects import ensure_writable, get_project

COLUMNS = ["id", "text", "intents", "split", "version"]


def acting_user(user_id: int | None) -> int | None:
    """The given user, or the one on whose behalf this request runs (for the audit log)."""
    return user_id if user_id is not None else current_user_id()


def project_id_in(s: Any, project: str, *, write: bool = False) -> int:
    """The project's id within session ``s``; with ``write``, refused for a read-only project."""
    p = get_project(s, project)
    if write:
        ensure_writable(p)
    return p.id


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
    """Labels typed as ``a|b`` / ``a, b`` or picked from a multiselect; ``(none)`` = no intent."""
    if value is None:
        return []
    items = value if isinstance(value, list) else value.replace(",", "|").split("|")
    return [v.strip() for v in items if v.strip() and v.strip() != "(none)"]


def table(
    ctx: AppContext,
    project: str,
    *,
    intent: str | None = None,
    split: str | None = None,
    search: str | None = None,
    limit: int = 2000,
) -> list[dict[str, Any]]:
    """Rows for the utterance table, filtered by intent (``(none)`` = unlabelled), split, text."""
    with ctx.db.session() as s:
        pid = project_id_in(s, project)
        rows = repo.list_utterances(
            s, pid, intent=intent or None, split=split or None, search=search or None, limit=limit
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


def intents(ctx: AppContext, project: str) -> list[dict[str, Any]]:
    with ctx.db.session() as s:
        return [asdict(i) for i in repo_projects.list_intents(s, project_id_in(s, project))]


def intent_names(ctx: AppContext, project: str) -> list[str]:
    return [i["name"] for i in intents(ctx, project)]


def add_utterance(
    ctx: AppContext,
    project: str,
    text: str,
    labels: str | list[str] | None = None,
    split: str = "train",
    *,
    user_id: int | None = None,
    context: str = "",
) -> dict[str, Any]:
    """Add an utterance (``context``: the turn before it, ``""`` for none)."""
    with ctx.db.write() as s:
        row = repo.add_utterance(
            s,
            project_id_in(s, project, write=True),
            text,
            parse_label_input(labels),
            split=split,
            user_id=acting_user(user_id),
            context=context,
        )
    return asdict(row)


def label_text(
    ctx: AppContext,
    project: str,
    text: str,
    labels: str | list[str] | None,
    split: str = "train",
    *,
    user_id: int | None = None,
) -> dict[str, Any]:
    """Add a labelled utterance, or relabel it when the text is already in the project, in one
    transaction that holds the write lock: two people sending the same new text at once end with
    one row carrying the later labels, never an "already in this project" error."""
    names = parse_label_input(labels)
    with ctx.db.write() as s:
        pid = project_id_in(s, project, write=True)
        existing = repo.find_by_text(s, pid, text)
        if existing is None:
            row = repo.add_utterance(s, pid, text, names, split=split, user_id=acting_user(user_id))
        else:
            row = repo.set_labels(
                s, pid, existing, names, split=split or None, user_id=acting_user(user_id)
            )
    return asdict(row)


def label_utterance(
    ctx: AppContext,
    project: str,
    utterance_id: int,
    labels: str | list[str] | None,
    *,
    user_id: int | None = None,
    expected_version: int | None = None,
    split: str | None = None,
    text: str | None = None,
    batch: str | None = None,
    confirm_test: bool = True,
) -> dict[str, Any]:
    """Set an utterance's intents (and optionally its text and split) in one transaction, by the
    one labelling rule (:func:`storage.utterances.labelled_split`): an utterance that gets an
    intent leaves `unlabelled` for `train` unless `test` was chosen, so it joins the pool at once.
    Screens where one click could change a test row pass ``confirm_test`` as the person's
    explicit confirmation (:func:`refuse_unconfirmed_test_change`)."""
    names = parse_label_input(labels)
    with ctx.db.write() as s:
        pid = project_id_in(s, project, write=True)
        current = repo.get_utterance(s, pid, utterance_id)
        if not confirm_test:
            (now,) = repo.rows_by_id(s, pid, [utterance_id])
            refuse_unconfirmed_test_change(now, names, split or None)
        if text is not None and text.strip() != current.text:
            repo.update_utterance(
                s,
                pid,
                utterance_id,
                text=text,
                expected_version=expected_version,
                user_id=acting_user(user_id),
            )
            expected_version = None  # checked just now; the edit bumped it
        if expected_version is not None and current.version != expected_version:
            raise repo.ConflictError(
                f"Utterance #{utterance_id} was changed by someone else since you loaded it "
                f"(now: {current.text!r}); reload and try again."
            )
        row = repo.set_labels(
            s,
            pid,
            utterance_id,
            names,
            split=split or None,
            user_id=acting_user(user_id),
            batch=batch,
        )
    return asdict(row)


def move_split(
    ctx: AppContext,
    project: str,
    utterance_ids: list[int],
    split: str,
    *,
    user_id: int | None = None,
) -> int:
    with ctx.db.write() as s:
        pid = project_id_in(s, project, write=True)
        for uid in utterance_ids:
            repo.update_utterance(s, pid, uid, split=split, user_id=acting_user(user_id))
    return len(utterance_ids)


def edit_text(
    ctx: AppContext,
    project: str,
    utterance_id: int,
    text: str,
    *,
    expected_version: int | None = None,
    user_id: int | None = None,
) -> dict[str, Any]:
    with ctx.db.write() as s:
        row = repo.update_utterance(
            s,
            project_id_in(s, project, write=True),
            utterance_id,
            text=text,
            expected_version=expected_version,
            user_id=acting_user(user_id),
        )
    return asdict(row)


def delete_utterance(
    ctx: AppContext,
    project: str,
    utterance_id: int,
    *,
    user_id: int | None = None,
    batch: str | None = None,
    confirm_test: bool = True,
) -> None:
    """Delete an utterance (undo brings it back); ``confirm_test`` as in :func:`label_utterance`."""
    with ctx.db.write() as s:
        pid = project_id_in(s, project, write=True)
        if not confirm_test:
            (now,) = repo.rows_by_id(s, pid, [utterance_id])
            refuse_unconfirmed_test_change(now, None)
        repo.delete_utterance(
            s,
            pid,
            utterance_id,
            user_id=acting_user(user_id),
            batch=batch,
        )


def create_intent(ctx: AppContext, project: str, name: str, description: str = "") -> str:
    with ctx.db.write() as s:
        return repo_projects.create_intent(
            s, project_id_in(s, project, write=True), name, description
        ).name


def describe_intent(ctx: AppContext, project: str, name: str, description: str) -> str:
    """Set (or clear, with an empty text) an intent's description; returns it as stored.

    Raises:
        NotFoundError: no such intent. StorageError: a bad description; nothing changed.
    """
    if not (name or "").strip():
        raise ValueError("Choose an intent to describe.")
    with ctx.db.write() as s:
        return repo_projects.describe_intent(
            s, project_id_in(s, project, write=True), name, description
        ).description


def rename_intent(ctx: AppContext, project: str, old: str, new: str) -> str:
    with ctx.db.write() as s:
        return repo_projects.rename_intent(s, project_id_in(s, project, write=True), old, new).name


def merge_intents(
    ctx: AppContext, project: str, sources: list[str], target: str, *, user_id: int | None = None
) -> int:
    with ctx.db.write() as s:
        return repo_projects.merge_intents(
            s, project_id_in(s, project, write=True), sources, target, user_id=acting_user(user_id)
        )


def delete_intent(ctx: AppContext, project: str, name: str, *, user_id: int | None = None) -> int:
    with ctx.db.write() as s:
        return repo_projects.delete_intent(
            s, project_id_in(s, project, write=True), name, user_id=acting_user(user_id)
        )


def _undone_message(events: list[Any]) -> str:
    if not events:
        return "Nothing to undo."
    first = events[0]
    if len(events) > 1:
        return f"Undid {first.action} of {len(events)} utterance(s)."
    back = ", ".join(first.before) or "no intent"
    what = "delete" if first.action == "delete" else first.action
    return f"Undid {what} of {first.utterance_text[:60]!r}: back to {back}."


def undo(ctx: AppContext, project: str, *, user_id: int | None = None) -> str:
    """Undo the last change still in effect (a whole batch, e.g. a merge). Says what was undone."""
    with ctx.db.write() as s:
        pid = project_id_in(s, project, write=True)
        return _undone_message(audit.undo_last(s, pid, user_id=acting_user(user_id)))


def undo_batch(ctx: AppContext, project: str, batch: str, *, user_id: int | None = None) -> str:
    """Undo one earlier change (a batch from :func:`activity`), if later edits did not touch it."""
    with ctx.db.write() as s:
        pid = project_id_in(s, project, write=True)
        events = audit.undo_batch(s, pid, batch.strip(), user_id=acting_user(user_id))
        return _undone_message(events)


ACTIVITY_COLUMNS = ["when", "user", "action", "rows", "example", "state", "batch"]


def activity(ctx: AppContext, project: str, limit: int = 100) -> list[dict[str, Any]]:
    """The project's recent changes, newest first, one row per batch (an action on many
    utterances is one row), with whether it can still be undone."""
    from storage.users import list_users

    with ctx.db.session() as s:
        pid = project_id_in(s, project)
        users = {u.id: u.name for u in list_users(s)}
        batches = audit.recent_batches(s, pid, limit)
    return [
        {
            "when": b.created_at.strftime("%Y-%m-%d %H:%M:%S"),
            "user": users.get(b.user_id or -1, "local"),
            "action": b.action,
            "rows": b.size,
            "example": b.example[:80],
            "state": (
                "undone" if b.undone else "can be undone" if b.undoable else b.blocked_by or "kept"
            ),
            "batch": b.id,
        }
        for b in batches
    ]
