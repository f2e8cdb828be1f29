"""A project's slot book, its intents' templates and the entity annotations on its utterances
(TaDSE). Values and templates arrive checked (:mod:`core.slots` is the one place for the rules;
:mod:`app.services.design.slots` calls it); this module stores them.

Example:
    >>> # with s a Session and pid a project id:
    >>> # set_slot_values(s, pid, "city", ["Berlin"]); slot_book(s, pid) -> {"city": ["Berlin"]}
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from storage.projects import get_intent
from storage.tables import Intent, SlotValue, Template, Utterance

_SLICE = 500


def slot_book(s: Session, project_id: int) -> dict[str, list[str]]:
    """Slot name -> its values (in the order they were added), slots sorted by name."""
    out: dict[str, list[str]] = {}
    rows = s.execute(
        select(SlotValue.slot, SlotValue.value)
        .where(SlotValue.project_id == project_id)
        .order_by(SlotValue.slot, SlotValue.id)
    )
    for slot, value in rows:
        out.setdefault(slot, []).append(value)
    return out


def set_slot_values(s: Session, project_id: int, slot: str, values: Sequence[str]) -> None:
    """Replace the slot's values (an empty list removes the slot); a value kept keeps its
    synonyms."""
    kept = slot_synonyms(s, project_id).get(slot, {})
    s.execute(delete(SlotValue).where(SlotValue.project_id == project_id, SlotValue.slot == slot))
    s.add_all(
        SlotValue(project_id=project_id, slot=slot, value=v, synonyms=kept.get(v, []))
        for v in values
    )
    s.flush()


def add_slot_values(
    s: Session,
    project_id: int,
    book: Mapping[str, Iterable[str]],
    synonyms: Mapping[str, Mapping[str, Sequence[str]]] | None = None,
) -> int:
    """Add the values the book lacks (an import), and the ``synonyms`` (slot -> value -> the
    other ways it is written) each value lacks; returns how many values were new."""
    have = {(slot, v) for slot, values in slot_book(s, project_id).items() for v in values}
    new = [(slot, v) for slot, values in book.items() for v in values if (slot, v) not in have]
    new = list(dict.fromkeys(new))
    s.add_all(SlotValue(project_id=project_id, slot=slot, value=v) for slot, v in new)
    s.flush()
    if synonyms:
        rows = s.scalars(
            select(SlotValue).where(
                SlotValue.project_id == project_id, SlotValue.slot.in_(list(synonyms))
            )
        )
        for row in rows:
            said = synonyms[row.slot].get(row.value, ())
            more = [w for w in said if w not in (row.synonyms or []) and w != row.value]
            if more:
                row.synonyms = [*(row.synonyms or []), *dict.fromkeys(more)]
        s.flush()
    return len(new)


def slot_synonyms(s: Session, project_id: int) -> dict[str, dict[str, list[str]]]:
    """Slot -> value -> its synonyms, for the values that have any."""
    out: dict[str, dict[str, list[str]]] = {}
    rows = s.execute(
        select(SlotValue.slot, SlotValue.value, SlotValue.synonyms)
        .where(SlotValue.project_id == project_id)
        .order_by(SlotValue.slot, SlotValue.id)
    )
    for slot, value, synonyms in rows:
        if synonyms:
            out.setdefault(slot, {})[value] = list(synonyms)
    return out


def templates_by_intent(s: Session, project_id: int) -> dict[str, list[str]]:
    """Intent name -> its templates (in the order they were added), for intents that have any."""
    out: dict[str, list[str]] = {}
    rows = s.execute(
        select(Intent.name, Template.text)
        .join(Intent, Intent.id == Template.intent_id)
        .where(Intent.project_id == project_id)
        .order_by(Intent.name, Template.id)
    )
    for name, text in rows:
        out.setdefault(name, []).append(text)
    return out


def set_templates(s: Session, project_id: int, intent: str, texts: Sequence[str]) -> None:
    """Replace an intent's templates (raises NotFoundError for an unknown intent)."""
    i = get_intent(s, project_id, intent)
    s.execute(delete(Template).where(Template.intent_id == i.id))
    s.add_all(Template(intent_id=i.id, text=t) for t in texts)
    s.flush()


def add_templates(s: Session, project_id: int, templates: Mapping[str, Iterable[str]]) -> int:
    """Add the templates each (existing) intent lacks (an import); returns how many were new."""
    have = templates_by_intent(s, project_id)
    added = 0
    for intent, texts in templates.items():
        new = [t for t in dict.fromkeys(texts) if t not in have.get(intent, [])]
        if new:
            i = get_intent(s, project_id, intent)
            s.add_all(Template(intent_id=i.id, text=t) for t in new)
            added += len(new)
    s.flush()
    return added


def set_entities(s: Session, project_id: int, by_text: Mapping[str, list[dict[str, Any]]]) -> int:
    """Store entity annotations on the project's utterances with these texts; returns how many
    utterances were annotated (texts not in the project are left out)."""
    texts = list(by_text)
    done = 0
    for i in range(0, len(texts), _SLICE):
        part = texts[i : i + _SLICE]
        for u in s.scalars(
            select(Utterance).where(Utterance.project_id == project_id, Utterance.text.in_(part))
        ):
            if u.entities != by_text[u.text]:
                u.entities = by_text[u.text]
                done += 1
    s.flush()
    return done


def entities_by_text(s: Session, project_id: int) -> dict[str, list[dict[str, Any]]]:
    """Text -> entity annotations, for the project's annotated utterances."""
    rows = s.execute(
        select(Utterance.text, Utterance.entities).where(Utterance.project_id == project_id)
    )
    return {text: list(ents) for text, ents in rows if ents}


def moved_entities(old: str, new: str, entities: list[Any]) -> list[Any]:
    """The annotations of ``old`` whose value is still in the edited text, moved to where it is
    now (left to right); an annotation whose value was edited away is dropped."""
    out: list[Any] = []
    pos = 0
    for e in sorted(entities, key=lambda e: int(e["start"])):
        surface = old[int(e["start"]) : int(e["end"])]
        at = new.find(surface, pos) if surface else -1
        if at >= 0:
            out.append({**e, "start": at, "end": at + len(surface)})
            pos = at + len(surface)
    return out
