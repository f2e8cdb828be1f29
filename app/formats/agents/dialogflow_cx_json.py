"""Dialogflow CX agent as one JSON file: ``intents`` with their ``trainingPhrases`` inline (and
``entityTypes``), read and written as the JSON package is (:mod:`app.formats.agents.dialogflow_cx`).

Example:
    >>> doc = {"intents": [{"displayName": "hi", "trainingPhrases": [{"parts": [{"text": "hey"}]}]}]}
    >>> JSON_FORMAT.detect(doc), JSON_FORMAT.read(doc).intents[0].phrases
    (True, [('intents[0].trainingPhrases[0]', 'hey', 'train')])
"""

from __future__ import annotations

import copy
from typing import Any

from app.formats.agents.base import AgentDoc, pick_language
from app.formats.agents.dialogflow_cx import (
    _NAME,
    NEGATIVE,
    _carrier,
    _intent,
    _new_intent,
    _NewPhrase,
    _parameters,
    _phrases,
    phrase_text,
)
from app.formats.agents.dialogflow_entities import (
    cx_json_entity_types,
    cx_json_values,
    cx_parameter_types,
)
from app.formats.agents.export import (
    LOST_PART,
    AgentFormat,
    ExportPlan,
    Relabelled,
    merge_phrases,
    set_description,
)


def json_detect(doc: Any) -> bool:
    intents = doc.get("intents") if isinstance(doc, dict) else None
    return (
        isinstance(intents, list)
        and bool(intents)
        and all(isinstance(i, dict) and "displayName" in i for i in intents[:5])
    )


def _json_language(doc: Any) -> str:
    """The agent's default language, else the first phrase's (``""``: none is named)."""
    lang = doc.get("defaultLanguageCode") or doc.get("languageCode")
    if isinstance(lang, str) and lang:
        return lang
    for obj in doc["intents"]:
        said = obj.get("trainingPhrases") if isinstance(obj, dict) else None
        for phrase in said if isinstance(said, list) else []:
            if isinstance(phrase, dict) and isinstance(phrase.get("languageCode"), str):
                return str(phrase["languageCode"])
    return ""


def json_read(doc: Any, language: str | None = None) -> AgentDoc:
    problems: list[tuple[int, str]] = []
    have = {
        p["languageCode"]
        for obj in doc["intents"]
        if isinstance(obj, dict) and isinstance(obj.get("trainingPhrases"), list)
        for p in obj["trainingPhrases"]
        if isinstance(p, dict) and isinstance(p.get("languageCode"), str)
    }
    lang = pick_language(language, _json_language(doc), have, problems)
    intents = []
    for i, obj in enumerate(doc["intents"]):
        intent = _intent(obj, f"intents[{i}]", problems)
        if intent is None:
            continue
        said = obj.get("trainingPhrases", [])
        types = cx_parameter_types(obj)
        _phrases(intent, said, f"intents[{i}].trainingPhrases", problems, lang, types)
        intents.append(intent)
    return AgentDoc(intents, lang, problems=problems, values=cx_json_values(doc, lang))


def json_apply(doc: Any, plan: ExportPlan) -> Any:
    new = copy.deepcopy(doc)
    make = _NewPhrase(plan, inline=True)

    def mine(obj: dict[str, Any]) -> list[Any]:
        said = obj.get("trainingPhrases", [])
        return [x for x in said if x.get("languageCode", plan.language) == plan.language]

    moved = Relabelled(plan, {obj["displayName"]: mine(obj) for obj in new["intents"]}, phrase_text)
    carried = _carrier(moved)
    intents = []
    for obj in new["intents"]:
        name = obj["displayName"]
        if name in plan.dropped:
            continue
        p = plan.intents.get(name)
        if p is not None and p.texts is not None:
            said = obj.get("trainingPhrases", [])
            ours = mine(obj)
            make.into(obj, p.texts, ours)
            merged = merge_phrases(
                ours, phrase_text, p.texts, make, carried(name, _parameters(obj))
            )
            make.declare(obj)
            kept = {id(x) for x in merged} | {id(x) for x in said if not any(x is y for y in ours)}
            obj["trainingPhrases"] = [x for x in said if id(x) in kept] + [
                x for x in merged if not any(x is y for y in said)
            ]
            set_description(obj, "description", p.description)
        intents.append(obj)
    for name in plan.new:
        p = plan.intents[name]
        obj = _new_intent(name, p.description)
        make.into(obj, p.texts or [], [])
        obj["trainingPhrases"] = merge_phrases(
            [], phrase_text, p.texts or [], make, carried(name, set())
        )
        make.declare(obj)
        intents.append(obj)
    new["intents"] = intents
    cx_json_entity_types(new, plan.language, plan.entity_types())
    plan.notes += moved.note(LOST_PART)
    return new


def json_skeleton(name: str) -> dict[str, Any]:
    negative = {"displayName": NEGATIVE, "isFallback": True, "trainingPhrases": []}
    return {"displayName": name, "defaultLanguageCode": "en", "intents": [negative]}


JSON_FORMAT = AgentFormat(
    name="dialogflow-cx-json",
    title="Dialogflow CX agent (one JSON file)",
    container="json",
    detect=json_detect,
    read=json_read,
    skeleton=json_skeleton,
    apply=json_apply,
    name_rule=_NAME,
)
