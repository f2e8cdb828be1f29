"""What an agent export's annotations bring back, found by reading the agent it wrote as an import
would (issue 74 item 2): an annotation of a phrase it wrote that comes back as another entity
type, under another role, without its normalised value (Rasa's ``[NYC]{"entity": "city",
"value": "New York"}``) or without its group is counted and named in the export's notes, so that
no platform drops one without a word. What a format's own notes name already (an annotation left
out whole, CLU's and Watson's roles) is not named twice.

Example:
    >>> from app.formats.agents.export import ExportPlan, IntentPlan
    >>> plan = ExportPlan({"fly": IntentPlan([("to NYC", "train")])}, [], set(), "en",
    ...                   entities={"to NYC": [EntitySpan(3, 6, "city", value="New York")]})
    >>> back = {"to NYC": [EntitySpan(3, 6, "city")]}
    >>> compare(plan, back, "Dialogflow ES agent", roles=True)
    ["Left out the value of 1 annotation(s) (what a synonym stands for): a Dialogflow ES agent has no place for it: 'NYC' → 'New York' (city)."]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from app.formats.agents.base import to_parsed
from app.formats.agents.entities import SHOW
from app.formats.agents.export import AgentFormat, ExportPlan
from app.formats.common import FormatError
from app.formats.rasa_entities import spans_of
from core.slots import EntitySpan, SlotData


def written_back(fmt: AgentFormat, written: Any, plan: ExportPlan) -> SlotData | None:
    """The annotations, slot values and synonyms of the agent an export wrote, as an import
    reads them (None when it cannot be read back: the import would say why)."""
    try:
        return to_parsed(fmt.read(written, plan.language or None), fmt.title).slots
    except FormatError:
        return None


def spans_by_text(slots: SlotData) -> dict[str, list[EntitySpan]]:
    """Each annotated text's spans."""
    return {text: spans_of(slots.entities, text) for text in slots.entities}


def values_left_out(plan: ExportPlan, back: SlotData, title: str) -> list[str]:
    """A note on the slot book's values and synonyms the written agent does not hold (an
    entity type the format writes only where its phrases name it: Lex's slot types)."""
    lost = [
        f"{entity}: {word!r}"
        for entity, values in plan.values.items()
        for value, words in values.items()
        for word in [value, *words]
        if word not in back.book.get(entity, [])
        and word not in back.synonyms.get(entity, {}).get(value, [])
    ]
    if not lost:
        return []
    article = "an" if title[:1].lower() in "aeiou" else "a"
    return [
        f"Left out {len(lost)} slot value(s) and synonym(s): {article} {title} holds the values "
        f"of the entity types its phrases name: {_shown(lost)}."
    ]


def compare(
    plan: ExportPlan, back: Mapping[str, Sequence[EntitySpan]], title: str, *, roles: bool
) -> list[str]:
    """Notes on the annotations of the phrases ``plan`` writes that come back otherwise in
    ``back`` (text -> spans); ``roles``: whether the format is to carry roles (else its own
    notes name them)."""
    written = {t for p in plan.intents.values() if p.texts for t, _ in p.texts}
    swapped, moved, valued, grouped = [], [], [], []
    for text, spans in plan.entities.items():
        if text not in written:
            continue
        found = {(s.start, s.end): s for s in back.get(text, [])}
        for s in spans:
            got = found.get((s.start, s.end))
            if got is None:
                continue  # left out whole: the format's notes name it
            surface = text[s.start : s.end]
            if got.entity != s.entity:
                swapped.append(f"{surface!r} ({s.entity} → {got.entity} in {text[:40]!r})")
            elif roles and got.role != s.role:
                moved.append(f"{surface!r} ({s.entity}: {s.role or '-'} → {got.role or '-'})")
            if s.value and s.value != surface.strip() and got.value != s.value:
                valued.append(f"{surface!r} → {s.value!r} ({s.entity})")
            if s.group and got.group != s.group:
                grouped.append(f"{surface!r} (group {s.group} in {text[:40]!r})")
    article = "an" if title[:1].lower() in "aeiou" else "a"
    said = [
        (swapped, "annotation(s) come back as another entity type"),
        (
            moved,
            f"annotation(s) come back under another role ({title}: a parameter has one entity "
            "type, so a role given two types in an intent is written as a parameter per type)",
        ),
    ]
    notes = [f"{len(items)} {what}: {_shown(items)}." for items, what in said if items]
    if valued:
        notes.append(
            f"Left out the value of {len(valued)} annotation(s) (what a synonym stands for): "
            f"{article} {title} has no place for it: {_shown(valued)}."
        )
    if grouped:
        notes.append(
            f"Left out the group of {len(grouped)} annotation(s): {article} {title} has no "
            f"entity groups: {_shown(grouped)}."
        )
    return notes


def _shown(items: Sequence[str]) -> str:
    """The first :data:`SHOW` items, and how many more."""
    more = f" and {len(items) - SHOW} more" if len(items) > SHOW else ""
    return ", ".join(items[:SHOW]) + more
