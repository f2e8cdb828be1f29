"""Microsoft LUIS app JSON and Conversational Language Understanding (CLU) project JSON.

- LUIS: ``intents[].name``; ``utterances[].text`` / ``.intent``. The ``None`` intent is
  ``out_of_scope``. Kept: entities, patterns, phrase lists, an utterance's entity labels (also
  when the project relabelled it: they name the app's entities, not the intent's), settings.
- CLU: ``assets.intents[].category``; ``assets.utterances[].text`` / ``.intent`` / ``.language``
  / ``.dataset`` (``Test``: our test split, written back so). The ``None`` intent is
  ``out_of_scope``. Utterances in the project's language (``metadata.language``; one without a
  language is in it) are read; the others are kept as they are, like entities, an utterance's
  entity labels and the project's settings.

Example:
    >>> app = {"luis_schema_version": "7.0.0", "intents": [{"name": "None"}, {"name": "Hi"}],
    ...        "utterances": [{"text": "hello", "intent": "Hi", "entities": []}]}
    >>> LUIS.detect(app), [(i.name, i.fallback, len(i.phrases)) for i in LUIS.read(app).intents]
    (True, [('None', True, 0), ('Hi', False, 1)])
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from app.formats.agents.base import (
    AgentDoc,
    PlatformIntent,
    as_text,
    name_with,
    pick_language,
)
from app.formats.agents.entities import left_out_note, uncarried_values
from app.formats.agents.export import (
    AgentFormat,
    ExportPlan,
    merge_utterances,
)
from app.formats.agents.offset_entities import (
    clu_declare,
    clu_labels,
    clu_spans,
    clu_values,
    luis_declare,
    luis_labels,
    luis_spans,
    luis_values,
)
from core.slots import EntitySpan

NONE_INTENT = "None"
# LUIS and CLU intent names are at most 50 characters.
MAX_NAME = 50


def _read(
    intents: Any,
    utterances: Any,
    key: str,
    at: str,
    split_of: Callable[[dict[str, Any]], str | None],
    spans_of: Callable[[Any], list[EntitySpan]],
    description_key: str | None = None,
) -> tuple[list[PlatformIntent], list[tuple[int, str]]]:
    """Intents named by ``key`` and the utterances of each (``split_of``: the split of one in
    the language read, None for one to leave out; ``spans_of``: its entity labels)."""
    problems: list[tuple[int, str]] = []
    found: dict[str, PlatformIntent] = {}
    out = []
    if not isinstance(intents, list) or not isinstance(utterances, list):
        return [], [(0, f"{at}intents and {at}utterances must be lists")]
    for i, item in enumerate(intents):
        name = as_text(item.get(key)) if isinstance(item, dict) else None
        if name is None:
            problems.append((0, f"{at}intents[{i}]: an intent needs a '{key}' string"))
            continue
        described = item.get(description_key) if description_key else None
        intent = PlatformIntent(
            name,
            f"{at}intents[{i}]",
            described if isinstance(described, str) else "",
            fallback=name == NONE_INTENT,
        )
        found.setdefault(name, intent)
        out.append(intent)
    for j, u in enumerate(utterances):
        where = f"{at}utterances[{j}]"
        text = as_text(u.get("text")) if isinstance(u, dict) else None
        name = as_text(u.get("intent")) if isinstance(u, dict) else None
        if text is None or name is None:
            problems.append((0, f"{where}: an utterance needs 'text' and 'intent' strings"))
            continue
        if name not in found:
            problems.append((0, f"{where}: intent {name!r} is not in {at}intents"))
            continue
        split = split_of(u)
        if split is not None:
            found[name].phrases.append((f"{where}.text", text, split))
            if spans := spans_of(u):
                found[name].spans[f"{where}.text"] = spans
    return out, problems


def _text(u: Any) -> str | None:
    return as_text(u.get("text")) if isinstance(u, dict) else None


def _intent(u: Any) -> str | None:
    return as_text(u.get("intent")) if isinstance(u, dict) else None


def _relabel(u: dict[str, Any], intent: str) -> dict[str, Any]:
    """An utterance the project relabelled: only its intent changes (its entity labels name
    entities of the whole app)."""
    u["intent"] = intent
    return u


# --- LUIS --------------------------------------------------------------------------------------


def luis_detect(doc: Any) -> bool:
    return isinstance(doc, dict) and (
        "luis_schema_version" in doc
        or (
            isinstance(doc.get("intents"), list)
            and isinstance(doc.get("utterances"), list)
            and all(isinstance(i, dict) and "name" in i for i in doc["intents"][:5])
        )
    )


def luis_read(doc: Any, language: str | None = None) -> AgentDoc:
    intents, problems = _read(
        doc.get("intents"), doc.get("utterances"), "name", "", lambda u: "train", luis_spans
    )
    culture = doc.get("culture")
    lang = pick_language(language, culture if isinstance(culture, str) else "", [], problems)
    nested = sum(_children(e) for u in doc.get("utterances") or [] for e in _labels(u))
    notes = (
        [
            f"Kept {nested} nested entity label(s) (a machine-learned entity's children) with "
            "the app only: an export to LUIS writes them back, other formats leave them out."
        ]
        if nested
        else []
    )
    return AgentDoc(intents, lang, notes, problems=problems, values=luis_values(doc))


def _labels(u: Any) -> list[Any]:
    found = u.get("entities") if isinstance(u, dict) else None
    return found if isinstance(found, list) else []


def _children(label: Any) -> int:
    """How many labels a LUIS label holds inside it, at any depth."""
    found = label.get("children") if isinstance(label, dict) else None
    return sum(1 + _children(c) for c in found) if isinstance(found, list) else 0


def luis_skeleton(name: str) -> dict[str, Any]:
    return {
        "luis_schema_version": "7.0.0",
        "versionId": "0.1",
        "name": name,
        "desc": "",
        "culture": "en-us",
        "tokenizerVersion": "1.0.0",
        "intents": [{"name": NONE_INTENT, "features": []}],
        "entities": [],
        "hierarchicals": [],
        "composites": [],
        "closedLists": [],
        "prebuiltEntities": [],
        "utterances": [],
        "patternAnyEntities": [],
        "regex_entities": [],
        "phraselists": [],
        "regex_features": [],
        "patterns": [],
        "settings": [],
    }


def luis_apply(doc: Any, plan: ExportPlan) -> Any:
    new = copy.deepcopy(doc)
    new["intents"] = [i for i in new["intents"] if i.get("name") not in plan.dropped] + [
        {"name": n, "features": []} for n in plan.new
    ]
    made: list[EntitySpan] = []

    def make(text: str, intent: str, split: str) -> dict[str, Any]:
        spans = plan.spans(text)
        made.extend(spans)
        return {"text": text, "intent": intent, "entities": luis_labels(text, spans)}

    new["utterances"] = merge_utterances(
        new["utterances"], plan, intent_of=_intent, text_of=_text, make=make, relabel=_relabel
    )
    refused = luis_declare(new, made) if made else []
    plan.notes += left_out_note(
        "entity label(s)",
        sorted(set(refused)),
        "LUIS labels machine-learned entities only, and the app has another kind of entity "
        "by these names",
    )
    listed = {  # what the kept app's closed lists hold: canonical forms and their synonyms
        entity: set(values) | {w for words in values.values() for w in words}
        for entity, values in luis_values(doc).items()
    }
    plan.notes += left_out_note(
        "entity value(s) and synonym(s)",
        [
            f"{entity}: {value!r}"
            for entity, value in uncarried_values(plan)
            if value not in listed.get(entity, set())
        ],
        "a LUIS app's values are its closed lists, entities that cannot be labelled",
    )
    _descriptions_left_out(plan, {}, "a LUIS app")
    return new


def _descriptions_left_out(plan: ExportPlan, kept: dict[str, str], what: str) -> None:
    """Say how many of the project's intent descriptions the export does not write (those the
    kept agent holds already, spaces aside, are there)."""
    n = sum(
        1
        for name, p in plan.intents.items()
        if p.description and " ".join(kept.get(name, "").split()) != p.description
    )
    if n:
        plan.notes.append(f"Left out {n} intent description(s): {what} export does not write them.")


# --- CLU ---------------------------------------------------------------------------------------


def _language(doc: Any) -> str:
    meta = doc.get("metadata")
    lang = meta.get("language") if isinstance(meta, dict) else None
    return lang if isinstance(lang, str) else "en-us"


def clu_detect(doc: Any) -> bool:
    assets = doc.get("assets") if isinstance(doc, dict) else None
    return isinstance(assets, dict) and "intents" in assets and "utterances" in assets


def clu_read(doc: Any, language: str | None = None) -> AgentDoc:
    asked: list[tuple[int, str]] = []
    have = {
        u["language"]
        for u in doc["assets"].get("utterances") or []
        if isinstance(u, dict) and isinstance(u.get("language"), str)
    }
    picked = pick_language(language, _language(doc), have, asked)
    lang = picked.lower()

    def split_of(u: dict[str, Any]) -> str | None:
        if str(u.get("language") or lang).lower() != lang:
            return None
        return "test" if str(u.get("dataset", "")).lower() == "test" else "train"

    assets = doc["assets"]
    intents, problems = _read(
        assets.get("intents"),
        assets.get("utterances"),
        "category",
        "assets.",
        split_of,
        clu_spans,
        "description",
    )
    others = sum(
        1
        for u in assets.get("utterances") or []
        if isinstance(u, dict) and str(u.get("language") or lang).lower() != lang
    )
    notes = [f"Kept {others} utterance(s) in other languages as they are."] if others else []
    return AgentDoc(intents, picked, notes, asked + problems, clu_values(doc, lang))


def clu_skeleton(name: str) -> dict[str, Any]:
    return {
        "projectFileVersion": "2022-05-01",
        "stringIndexType": "Utf16CodeUnit",
        "metadata": {
            "projectKind": "Conversation",
            "projectName": name,
            "multilingual": False,
            "description": "",
            "language": "en-us",
            "settings": {"confidenceThreshold": 0},
        },
        "assets": {
            "projectKind": "Conversation",
            "intents": [{"category": NONE_INTENT}],
            "entities": [],
            "utterances": [],
        },
    }


def _dataset(raw: dict[str, Any], split: str) -> dict[str, Any]:
    was = "test" if str(raw.get("dataset", "")).lower() == "test" else "train"
    if was != split:
        raw["dataset"] = "Test" if split == "test" else "Train"
    return raw


def clu_apply(doc: Any, plan: ExportPlan) -> Any:
    new = copy.deepcopy(doc)
    assets = new["assets"]
    lang = plan.language
    assets["intents"] = [i for i in assets["intents"] if i.get("category") not in plan.dropped] + [
        {"category": n} for n in plan.new
    ]

    made: list[EntitySpan] = []

    def make(text: str, intent: str, split: str) -> dict[str, Any]:
        spans = plan.spans(text)
        made.extend(spans)
        labels = clu_labels(text, spans)
        u: dict[str, Any] = {"text": text, "language": lang, "intent": intent, "entities": labels}
        if split == "test":
            u["dataset"] = "Test"
        return u

    assets["utterances"] = merge_utterances(
        assets["utterances"],
        plan,
        intent_of=_intent,
        text_of=_text,
        make=make,
        update=_dataset,
        mine=lambda u: str(u.get("language") or lang).lower() == lang.lower(),
        relabel=_relabel,
    )
    named = {s.entity for s in made}
    types = plan.entity_types()
    clu_declare(assets, {e: v for e, v in types.items() if e in named or plan.values.get(e)}, lang)
    plan.notes += left_out_note(
        "role(s) of entity annotations",
        [f"{s.role!r} ({s.entity})" for s in made if s.role],
        "CLU entities have no roles",
    )
    kept = {
        str(i.get("category")): i["description"]
        for i in doc["assets"]["intents"]
        if isinstance(i, dict) and isinstance(i.get("description"), str)
    }
    _descriptions_left_out(plan, kept, "a CLU project")
    return new


_NAME = name_with(lambda c: c.isprintable() and c not in "|", fill="_", limit=MAX_NAME)

LUIS = AgentFormat(
    name="luis",
    title="LUIS app",
    container="json",
    detect=luis_detect,
    read=luis_read,
    skeleton=luis_skeleton,
    apply=luis_apply,
    name_rule=_NAME,
)
CLU = AgentFormat(
    name="clu",
    title="CLU project",
    container="json",
    detect=clu_detect,
    read=clu_read,
    skeleton=clu_skeleton,
    apply=clu_apply,
    name_rule=_NAME,
    test_split=True,
)
