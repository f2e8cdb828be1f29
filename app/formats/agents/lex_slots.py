"""Slots in a Lex V2 bot, both ways (issue 66 item 2: a ``{CardType}`` reference came back from
CSV or Rasa as plain text, and slot definitions did not travel at all).

Read: a sample utterance's reference to a slot (``I want a {CardType} card``) is an annotated
span over ``{CardType}`` whose entity is the slot's type (``slotTypeName`` in the intent's
``Slots/<slot>/Slot.json``: ``CardTypes``, ``AMAZON.Date``) and whose role is the slot's name; a
custom slot type's values and synonyms (``SlotTypes/<type>/SlotType.json``) join the slot book.
Other formats carry the span (Rasa as ``[{CardType}]{"entity": "CardTypes", "role":
"CardType"}``, Dialogflow as a parameter, CLU as an entity, CSV and JSONL in ``entities``).

Write: a new sample utterance whose span is such a reference keeps it, and its intent gets the
slot it lacks (``Slots/<slot>/Slot.json``, optional, with a prompt, and its place in
``slotPriorities``); a custom type the locale lacks gets its ``SlotType.json`` with the slot
book's values and synonyms (a type without values is refused by Lex: the slot is then
``AMAZON.AlphaNumeric``, and the export says so). A span that is a value, not a reference
(``fly to [Berlin](city)``), has no place in a sample utterance: its text is written plain and the
export names it.

Example:
    >>> reference_spans("a {CardType} card", {"CardType": "CardTypes"})
    [EntitySpan(start=2, end=12, entity='CardTypes', value=None, role='CardType', group=None)]
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from app.formats.agents.base import dump_json, load_json
from app.formats.agents.entities import reference
from app.formats.common import FormatError
from app.formats.rasa_entities import SLOT_REFERENCE
from core.slots import EntitySpan

Files = dict[str, bytes]
BUILT_IN = "AMAZON."
NO_VALUES = "AMAZON.AlphaNumeric"
_LEX_NAME = re.compile(r"([0-9a-zA-Z][_-]?){1,100}")


def slot_types(files: Files, intent_path: str) -> dict[str, str]:
    """An intent's slots: name -> slot type (``Slots/<slot>/Slot.json``)."""
    folder = intent_path[: -len("Intent.json")] + "Slots/"
    out = {}
    for path in files:
        if path.startswith(folder) and path.endswith("/Slot.json"):
            try:
                slot = load_json(files[path], path)
            except FormatError:
                continue
            if isinstance(slot, dict) and isinstance(slot.get("name"), str):
                kind = slot.get("slotTypeName")
                out[slot["name"]] = kind if isinstance(kind, str) and kind else slot["name"]
    return out


def reference_spans(text: str, types: Mapping[str, str]) -> list[EntitySpan]:
    """The slot references of a sample utterance as spans (entity: the slot's type)."""
    out = []
    for m in SLOT_REFERENCE.finditer(text):
        slot = m.group(1)
        kind = types.get(slot, slot)
        out.append(EntitySpan(m.start(), m.end(), kind, role=slot if slot != kind else None))
    return out


def locale_values(files: Files, locale: str) -> dict[str, dict[str, list[str]]]:
    """The locale's custom slot types: type -> value -> synonyms."""
    out: dict[str, dict[str, list[str]]] = {}
    for path in files:
        if not (path.startswith(locale + "SlotTypes/") and path.endswith("/SlotType.json")):
            continue
        try:
            obj = load_json(files[path], path)
        except FormatError:
            continue
        if not isinstance(obj, dict) or not isinstance(obj.get("name"), str):
            continue
        mine = out.setdefault(obj["name"], {})
        for item in obj.get("slotTypeValues") or []:
            sample = item.get("sampleValue") if isinstance(item, dict) else None
            value = sample.get("value") if isinstance(sample, dict) else None
            if isinstance(value, str):
                words = [
                    w["value"]
                    for w in item.get("synonyms") or []
                    if isinstance(w, dict) and isinstance(w.get("value"), str)
                ]
                mine.setdefault(value, []).extend(words)
    return out


def needed_slots(text: str, spans: Sequence[EntitySpan]) -> dict[str, str]:
    """The slots a new sample utterance's reference spans name: slot -> type."""
    return {slot: s.entity for s in spans if (slot := reference(text, s)) is not None}


def value_spans(text: str, spans: Sequence[EntitySpan]) -> list[str]:
    """The annotations of a sample utterance that are values, not references, as a note's items."""
    return [
        f"{text[s.start : s.end]!r} ({s.entity} in {text!r})"
        for s in spans
        if reference(text, s) is None
    ]


def add_slots(
    out: Files,
    intent_path: str,
    obj: dict[str, Any],
    needed: Mapping[str, str],
    values: Mapping[str, Mapping[str, Sequence[str]]],
    locale: str,
) -> list[str]:
    """Give the intent at ``intent_path`` (its JSON ``obj``, changed in place) the slots it
    lacks, and the locale the custom slot types it lacks; notes on types written otherwise."""
    have = slot_types(out, intent_path)
    folder = intent_path[: -len("Intent.json")] + "Slots/"
    priorities = obj.setdefault("slotPriorities", []) if needed else []
    known = set(locale_values(out, locale))
    notes = []
    for slot, kind in needed.items():
        if slot in have:
            continue
        if not kind.startswith(BUILT_IN) and kind not in known:
            name = kind if _LEX_NAME.fullmatch(kind) else ""
            if name and values.get(kind):
                out[f"{locale}SlotTypes/{name}/SlotType.json"] = dump_json(
                    _slot_type(name, values[kind])
                )
                known.add(name)
            else:
                notes.append(f"{slot} ({kind})")
                name = NO_VALUES
            kind = name
        out[f"{folder}{slot}/Slot.json"] = dump_json(_slot(slot, kind))
        priorities.append({"priority": len(priorities) + 1, "slotName": slot})
        have[slot] = kind
    return notes


def _slot(name: str, kind: str) -> dict[str, Any]:
    prompt = {"plainTextMessage": {"value": f"What is the {name}?"}}
    return {
        "name": name,
        "description": None,
        "slotTypeName": kind,
        "valueElicitationSetting": {
            "slotConstraint": "Optional",
            "promptSpecification": {
                "messageGroupsList": [{"message": prompt, "variations": None}],
                "maxRetries": 2,
                "allowInterrupt": True,
            },
            "sampleUtterances": None,
            "defaultValueSpecification": None,
            "waitAndContinueSpecification": None,
        },
        "obfuscationSetting": None,
        "multipleValuesSetting": None,
    }


def _slot_type(name: str, values: Mapping[str, Sequence[str]]) -> dict[str, Any]:
    return {
        "name": name,
        "description": None,
        "parentSlotTypeSignature": None,
        "slotTypeValues": [
            {"sampleValue": {"value": v}, "synonyms": [{"value": w} for w in words] or None}
            for v, words in values.items()
        ],
        "valueSelectionSetting": {
            "resolutionStrategy": "OriginalValue",
            "regexFilter": None,
            "advancedRecognitionSetting": None,
        },
        "externalSourceSetting": None,
    }
