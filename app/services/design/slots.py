"""The slot book and templates (TaDSE) of a project: view, edit, import, export. The rules are
:mod:`core.slots`'s; a refused edit changes nothing and says why. They are project data: Rasa
YAML (entity annotations, ``lookup:`` tables) and slot book files bring them in and take them out;
retraining does not use them.

Example:
    >>> save_slot(serving_state.db, "shop", "city", "Berlin\\nParis")  # doctest: +SKIP
    2
    >>> save_templates(serving_state.db, "shop", "book_flight", "fly me to {city}")  # doctest: +SKIP
    1
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from app.access import ProjectHandle, writing
from core.slots import (
    SlotData,
    SlotError,
    check_slot_name,
    check_template,
    check_templates,
    check_values,
    placeholders,
)
from storage import slots as repo
from storage.db import Database


def lines(value: str | Sequence[str] | None) -> list[str]:
    """One item per line of a text box (blank lines dropped), or the list as given."""
    if value is None:
        return []
    if isinstance(value, str):
        return [line for line in value.splitlines() if line.strip()]
    return list(value)


def slot_book(db: Database, p: ProjectHandle) -> dict[str, list[str]]:
    """Slot name -> values."""
    with db.session() as s:
        return repo.slot_book(s, p.id)


def templates(db: Database, p: ProjectHandle, intent: str | None = None) -> dict[str, list[str]]:
    """Intent -> templates (one intent's only when ``intent`` is given)."""
    with db.session() as s:
        found = repo.templates_by_intent(s, p.id)
    return found if intent is None else {intent: found.get(intent, [])}


def _users_of(found: Mapping[str, Sequence[str]], slot: str) -> list[str]:
    return sorted(i for i, ts in found.items() if any(slot in placeholders(t) for t in ts))


def save_slot(db: Database, p: ProjectHandle, slot: str, values: str | Sequence[str]) -> int:
    """Replace a slot's values (one per line); returns how many it has now.

    Raises:
        SlotError: a bad name, no values, an empty or repeated value.
    """
    name = check_slot_name(slot)
    clean = check_values(name, lines(values))
    if not clean:
        raise SlotError(f"Slot {name!r} needs at least one value (Delete slot removes it).")
    with writing(db, p) as s:
        repo.set_slot_values(s, p.id, name, clean)
    return len(clean)


def delete_slot(db: Database, p: ProjectHandle, slot: str) -> None:
    """Remove a slot and its values; refused while a template names it."""
    name = check_slot_name(slot)
    with writing(db, p) as s:
        pid = p.id
        if name not in repo.slot_book(s, pid):
            raise SlotError(f"The project has no slot {name!r}.")
        users = _users_of(repo.templates_by_intent(s, pid), name)
        if users:
            raise SlotError(
                f"Slot {name!r} is named by templates of {', '.join(users[:5])}; edit those "
                "templates first. Nothing was changed."
            )
        repo.set_slot_values(s, pid, name, [])


def save_templates(db: Database, p: ProjectHandle, intent: str, texts: str | Sequence[str]) -> int:
    """Replace an intent's templates (one per line; none clears them); returns how many.

    Raises:
        SlotError: a template that names no slot or a slot the book lacks, or one listed twice.
        NotFoundError: an unknown intent.
    """
    with writing(db, p) as s:
        pid = p.id
        clean = check_templates(lines(texts), repo.slot_book(s, pid))
        repo.set_templates(s, pid, intent, clean)
    return len(clean)


def check_slot_data(data: SlotData, known: Mapping[str, Sequence[str]] | None = None) -> SlotData:
    """The file's slot data checked as a whole (templates against its book plus ``known``, the
    project's), values and templates each kept once.

    Raises:
        SlotError: a bad slot name or value, or a template naming a slot with no values.
    """
    book = {
        check_slot_name(slot): check_values(slot, dict.fromkeys(v.strip() for v in values))
        for slot, values in data.book.items()
    }
    every = {**(known or {}), **book}
    found = {
        intent: [check_template(t, every) for t in dict.fromkeys(ts)]
        for intent, ts in data.templates.items()
    }
    synonyms = {
        slot: {
            value: check_values(f"{slot} ({value})", dict.fromkeys(w.strip() for w in words))
            for value, words in by_value.items()
            if value in book.get(slot, ()) or value in (known or {}).get(slot, ())
        }
        for slot, by_value in data.synonyms.items()
    }
    return SlotData(book, found, data.entities, synonyms)


def import_slot_data(db: Database, p: ProjectHandle, data: SlotData) -> list[str]:
    """Add a file's slot values, templates and entity annotations to a project (after its rows
    were imported); returns notes on what was added. All or nothing.

    Raises:
        SlotError: see :func:`check_slot_data`; NotFoundError: a template's intent is not in
            the project.
    """
    with writing(db, p) as s:
        pid = p.id
        data = check_slot_data(data, repo.slot_book(s, pid))
        values = repo.add_slot_values(s, pid, data.book, data.synonyms)
        made = repo.add_templates(s, pid, data.templates)
        annotated = repo.set_entities(s, pid, data.entities)
    notes = []
    if values or made or annotated:
        notes.append(
            f"Slot book: {values} new value(s) in {len(data.book)} slot(s); {made} new "
            f"template(s); entity annotations kept on {annotated} utterance(s)."
        )
    return notes


def export_slot_data(db: Database, p: ProjectHandle) -> SlotData:
    """The project's slot book, templates and annotations, for an export."""
    with db.session() as s:
        pid = p.id
        return SlotData(
            repo.slot_book(s, pid),
            repo.templates_by_intent(s, pid),
            repo.entities_by_text(s, pid),
            repo.slot_synonyms(s, pid),
        )
