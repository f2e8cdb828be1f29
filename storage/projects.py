"""Projects, users and intents."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, delete, func, select
from sqlalchemy.orm import Session

from storage.capacity import DEFAULT_MAX_INTENTS as DEFAULT_MAX_INTENTS
from storage.capacity import MAX_INTENTS_KEY as MAX_INTENTS_KEY
from storage.capacity import check_intent_room
from storage.errors import ConflictError, NotFoundError, ReadOnlyProjectError, StorageError
from storage.names import project_index, validate_intent_name, validate_project_name
from storage.slices import slices
from storage.tables import Intent, Label, LabelEvent, Project, Template, Utterance
from storage.unknown_intents import check_known

__all__ = ["validate_intent_name"]  # re-exported: imported from here by older callers


@dataclass(frozen=True)
class IntentSummary:
    id: int
    name: str
    description: str
    n_train: int
    n_test: int


def create_project(
    s: Session,
    name: str,
    *,
    description: str = "",
    base_encoder: str = "minilm",
    read_only: bool = False,
    settings: dict[str, Any] | None = None,
) -> Project:
    name = validate_project_name(name)
    if s.scalar(select(Project.id).where(Project.name == name)) is not None:
        raise ConflictError(f"A project named {name!r} already exists.")
    project = Project(
        name=name,
        description=description,
        base_encoder=base_encoder,
        settings=dict(settings or {}),
        read_only=read_only,
    )
    s.add(project)
    s.flush()
    return project


def get_project(s: Session, name_or_id: str | int) -> Project:
    if isinstance(name_or_id, int):
        project = s.get(Project, name_or_id)
    else:
        project = s.scalar(select(Project).where(Project.name == name_or_id))
        if project is None and str(name_or_id).isdigit():
            project = s.get(Project, int(name_or_id))
    if project is None:
        raise NotFoundError(f"No project {name_or_id!r}.")
    return project


def project_id(s: Session | Connection, name_or_id: str | int) -> int:
    """The id of a project by name (or id, as :func:`get_project`), in one Core statement: the
    prediction path's lookup. Raises NotFoundError."""
    if isinstance(name_or_id, int):
        found = s.execute(select(Project.id).where(Project.id == name_or_id)).scalar()
    else:
        found = s.execute(select(Project.id).where(Project.name == name_or_id)).scalar()
        if found is None and str(name_or_id).isdigit():
            return project_id(s, int(name_or_id))
    if found is None:
        raise NotFoundError(f"No project {name_or_id!r}.")
    return int(found)


def names_starting(s: Session, prefix: str) -> set[str]:
    """The names of the projects whose name starts with ``prefix``."""
    return set(
        s.scalars(select(Project.name).where(Project.name.startswith(prefix, autoescape=True)))
    )


def list_projects(s: Session) -> list[Project]:
    return list(s.scalars(select(Project).order_by(Project.name)))


def delete_project(s: Session, project_id: int) -> None:
    s.execute(delete(Project).where(Project.id == project_id))


def ensure_writable(project: Project) -> None:
    if project.read_only:
        raise ReadOnlyProjectError(
            f"Project {project.name!r} is read-only (imported from a bundle)."
        )


def set_project_setting(s: Session, project_id: int, key: str, value: Any) -> Project:
    """Store one project setting (a JSON value; ``None`` is stored as null, not removed)."""
    project = get_project(s, project_id)
    ensure_writable(project)
    project.settings = {**(project.settings or {}), key: value}  # a new dict: written
    s.flush()
    return project


def set_base_encoder(s: Session, project_id: int, name: str) -> Project:
    """Set the project's base encoder (a registry name the caller checked): its next retrain
    trains on it; its versions keep theirs."""
    project = get_project(s, project_id)
    ensure_writable(project)
    project.base_encoder = name
    s.flush()
    return project


# --- intents -----------------------------------------------------------------------------------


def check_new_names(s: Session, project_id: int | None, names: Iterable[str]) -> None:
    """Refuse new intent names that are an existing intent's or each other's written another way
    (one key: :func:`storage.names.name_key`), naming the intent ("use 'greet'")."""
    index = project_index(s, project_id)
    for name in names:
        index.check_new(name)
        index.add(name)


# Longest intent description (a sentence or two: it is encoded as the intent's anchor).
MAX_DESCRIPTION_CHARS = 500


def validate_description(description: str | None) -> str:
    """A description as stored: stripped, one line, at most :data:`MAX_DESCRIPTION_CHARS`
    (empty: none).

    Raises:
        StorageError: too long, or it holds a NUL.
    """
    text = " ".join((description or "").split())
    if len(text) > MAX_DESCRIPTION_CHARS:
        raise StorageError(
            f"A description is at most {MAX_DESCRIPTION_CHARS} characters; this one has "
            f"{len(text)}."
        )
    if "\x00" in text:
        raise StorageError("A description cannot contain a NUL character.")
    return text


def get_intent(s: Session, project_id: int, name: str) -> Intent:
    """The intent ``name`` names: its own, else the one with its key (``Greet``: ``greet``)."""
    q = select(Intent).where(Intent.project_id == project_id)
    intent = s.scalar(q.where(Intent.name == name))
    if intent is None and (found := project_index(s, project_id).find(name)) not in (None, name):
        intent = s.scalar(q.where(Intent.name == found))
    if intent is None:
        raise NotFoundError(f"No intent {name!r} in this project.")
    return intent


def create_intent(
    s: Session,
    project_id: int,
    name: str,
    description: str = "",
    *,
    look_alikes_checked: bool = False,
) -> Intent:
    """A new intent (refused past the project's intent limit, see :func:`check_intent_room`, or
    when it looks like an existing one, see :func:`check_new_names`; ``look_alikes_checked``: the
    caller checked a batch of names already)."""
    if look_alikes_checked:
        name = validate_intent_name(name)
    else:  # one key per intent: Greet beside greet is refused, naming it
        name = project_index(s, project_id).validate_new(name)
    exists = s.scalar(select(Intent.id).where(Intent.project_id == project_id, Intent.name == name))
    if exists is not None:
        raise StorageError(f"Intent {name!r} already exists.")
    description = validate_description(description)
    check_intent_room(s, project_id, 1)
    intent = Intent(project_id=project_id, name=name, description=description)
    s.add(intent)
    s.flush()
    return intent


def intents_by_name(s: Session, project_id: int) -> dict[str, Intent]:
    return {i.name: i for i in s.scalars(select(Intent).where(Intent.project_id == project_id))}


def count_intents(s: Session, project_id: int, *, excluding: str = "") -> int:
    """How many intents the project has, ``excluding`` one name (e.g. out of scope): one count,
    not :func:`list_intents`'s per-intent label counts (the summary line after every key)."""
    found = select(func.count()).select_from(Intent).where(Intent.project_id == project_id)
    return int(s.scalar(found.where(Intent.name != excluding)) or 0)


def list_intents(s: Session, project_id: int) -> list[IntentSummary]:
    counts = s.execute(
        select(Label.intent_id, Utterance.split, func.count())
        .join(Utterance, Utterance.id == Label.utterance_id)
        .where(Utterance.project_id == project_id)
        .group_by(Label.intent_id, Utterance.split)
    ).all()
    by_intent: dict[int, dict[str, int]] = {}
    for intent_id, split, n in counts:
        by_intent.setdefault(intent_id, {})[split] = n
    return [
        IntentSummary(
            id=i.id,
            name=i.name,
            description=i.description,
            n_train=by_intent.get(i.id, {}).get("train", 0),
            n_test=by_intent.get(i.id, {}).get("test", 0),
        )
        for i in s.scalars(
            select(Intent).where(Intent.project_id == project_id).order_by(Intent.name)
        )
    ]


def describe_intent(s: Session, project_id: int, name: str, description: str | None) -> Intent:
    """Set (or clear, with an empty text) an intent's description.

    Raises:
        NotFoundError: no such intent. StorageError: a bad description (see
            :func:`validate_description`); nothing changed.
    """
    text = validate_description(description)
    intent = get_intent(s, project_id, name)
    intent.description = text
    s.flush()
    return intent


def describe_intents(
    s: Session, project_id: int, descriptions: dict[str, str], *, create_missing: bool = True
) -> tuple[list[str], list[str]]:
    """Set several intents' descriptions (an import's). Intents not in the project are created
    when ``create_missing`` (an intent declared by its description alone), else left out.
    Returns ``(created, left_out)`` intent names.

    Raises:
        StorageError: a bad name or description, or past the intent limit; nothing changed.
    """
    existing, index = intents_by_name(s, project_id), project_index(s, project_id)
    clean: dict[str, str] = {}
    for raw, text in descriptions.items():  # a name written another way describes its intent
        if (name := index.find(raw)) is None:
            index.add(name := validate_intent_name(raw))
        clean.setdefault(name, validate_description(text))
    missing = [n for n in clean if n not in existing]
    created, left_out = (missing, []) if create_missing else ([], missing)
    check_intent_room(s, project_id, len(created))
    check_new_names(s, project_id, created)
    for name, text in clean.items():
        if name in existing:
            existing[name].description = text
        elif create_missing:
            s.add(Intent(project_id=project_id, name=name, description=text))
    s.flush()
    return sorted(created), sorted(left_out)


def rename_intent(s: Session, project_id: int, old: str, new: str) -> Intent:
    intent = get_intent(s, project_id, old)
    others = project_index(s, project_id)
    others.discard(intent.name)  # a new case or spelling of its own name is fine
    new = others.validate_new(new)
    if new == intent.name:
        return intent
    if s.scalar(select(Intent.id).where(Intent.project_id == project_id, Intent.name == new)):
        raise StorageError(f"Intent {new!r} already exists; merge instead of renaming.")
    intent.name = new
    s.flush()
    return intent


def _labels_of(s: Session, utterance_ids: list[int]) -> dict[int, list[str]]:
    """Utterance id -> its intents (sorted names), for any number of ids (in slices)."""
    out: dict[int, list[str]] = {u: [] for u in utterance_ids}
    for part in slices(utterance_ids):
        rows = s.execute(
            select(Label.utterance_id, Intent.name)
            .join(Intent, Intent.id == Label.intent_id)
            .where(Label.utterance_id.in_(list(part)))
        ).all()
        for uid, name in rows:
            out[uid].append(name)
    return {u: sorted(v) for u, v in out.items()}


def merge_intents(
    s: Session,
    project_id: int,
    sources: list[str],
    target: str,
    *,
    user_id: int | None = None,
    create_missing: bool = True,
) -> int:
    """Move every label of ``sources`` onto ``target`` (created if new and ``create_missing``,
    else refused naming the nearest: :mod:`storage.unknown_intents`) and delete the sources.
    Returns the number of utterances relabelled. One undo batch."""
    target = validate_intent_name(target)
    if not create_missing:
        check_known(s, project_id, [target])
    target = project_index(s, project_id).find(target) or target  # Greet: into greet
    srcs = [i for i in (get_intent(s, project_id, n) for n in sources) if i.name != target]
    if not srcs:
        raise StorageError("Pick at least one intent to merge into another.")
    tgt = s.scalar(select(Intent).where(Intent.project_id == project_id, Intent.name == target))
    if tgt is None:
        tgt = create_intent(s, project_id, target)
    src_ids = [i.id for i in srcs]
    uids = list(
        s.scalars(select(Label.utterance_id).where(Label.intent_id.in_(src_ids)).distinct())
    )
    before = _labels_of(s, uids)
    batch = str(uuid.uuid4())
    have_target = set(
        s.scalars(
            select(Label.utterance_id).where(
                Label.intent_id == tgt.id, Label.utterance_id.in_(uids)
            )
        )
    )
    for uid in uids:
        if uid not in have_target:
            s.add(Label(utterance_id=uid, intent_id=tgt.id))
    s.flush()
    _move_templates(s, src_ids, tgt.id)
    for intent in srcs:
        s.delete(intent)
    s.flush()
    after = _labels_of(s, uids)
    _log_many(s, project_id, before, after, batch, "merge", user_id)
    return len(uids)


def _move_templates(s: Session, src_ids: list[int], target_id: int) -> None:
    """The merged intents' templates go to the target (a text it already has is kept once)."""
    have = set(s.scalars(select(Template.text).where(Template.intent_id == target_id)))
    for t in s.scalars(select(Template).where(Template.intent_id.in_(src_ids))):
        if t.text in have:
            s.delete(t)
        else:
            t.intent_id = target_id
            have.add(t.text)
    s.flush()


def delete_intent(s: Session, project_id: int, name: str, *, user_id: int | None = None) -> int:
    """Delete an intent and its labels; the utterances stay. One undo batch."""
    intent = get_intent(s, project_id, name)
    uids = list(s.scalars(select(Label.utterance_id).where(Label.intent_id == intent.id)))
    before = _labels_of(s, uids)
    s.delete(intent)
    s.flush()
    after = _labels_of(s, uids)
    _log_many(s, project_id, before, after, str(uuid.uuid4()), "delete_intent", user_id)
    return len(uids)


def _log_many(
    s: Session,
    project_id: int,
    before: dict[int, list[str]],
    after: dict[int, list[str]],
    batch: str,
    action: str,
    user_id: int | None,
) -> None:
    texts = dict(
        s.execute(select(Utterance.id, Utterance.text).where(Utterance.id.in_(list(before)))).all()
    )
    for uid, b in before.items():
        s.add(
            LabelEvent(
                project_id=project_id,
                utterance_id=uid,
                utterance_text=texts.get(uid, ""),
                user_id=user_id,
                batch=batch,
                action=action,
                before=b,
                after=after.get(uid, []),
            )
        )
    s.flush()
