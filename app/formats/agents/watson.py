"""IBM Watson Assistant / watsonx Assistant skill JSON: a dialog skill (``intents`` at the top) or
an actions skill (the same under ``workspace``).

Read: ``intents[].intent`` (the name), ``intents[].description`` and ``intents[].examples[].text``
with its ``mentions`` (entity annotations, :mod:`app.formats.agents.offset_entities`), and the
``entities``' values and synonyms; ``counterexamples[].text`` (the skill's *irrelevant*
examples) are ``out_of_scope``. Kept as they were: everything else (dialog nodes, actions,
entities, an unchanged example's ``mentions``, settings).

Example:
    >>> doc = {"intents": [{"intent": "hello", "examples": [{"text": "hi"}]}], "dialog_nodes": []}
    >>> detect(doc), [p[1] for p in read(doc).intents[0].phrases]
    (True, ['hi'])
"""

from __future__ import annotations

import copy
from typing import Any

from app.formats.agents.base import (
    AgentDoc,
    PlatformIntent,
    as_text,
    name_with,
    pick_language,
)
from app.formats.agents.entities import left_out_note
from app.formats.agents.export import (
    AgentFormat,
    ExportPlan,
    Relabelled,
    merge_phrases,
    set_description,
)
from app.formats.agents.offset_entities import (
    watson_declare,
    watson_mentions,
    watson_spans,
    watson_values,
)
from core.slots import EntitySpan

# The name the counterexamples go by among the intents (no Watson intent name holds '#').
COUNTEREXAMPLES = "#counterexamples"


def _root(doc: Any) -> tuple[dict[str, Any], str]:
    if isinstance(doc, dict) and isinstance(doc.get("workspace"), dict):
        return doc["workspace"], "workspace."
    return (doc if isinstance(doc, dict) else {}), ""


def detect(doc: Any) -> bool:
    root, _ = _root(doc)
    intents = root.get("intents")
    if not isinstance(intents, list):
        return False
    if intents:
        return all(isinstance(i, dict) and "intent" in i for i in intents[:5])
    return "dialog_nodes" in root or "counterexamples" in root or "actions" in root


def _text(example: Any) -> str | None:
    return as_text(example.get("text")) if isinstance(example, dict) else None


def _examples(
    items: Any,
    where: str,
    problems: list[tuple[int, str]],
    spans: dict[str, list[EntitySpan]] | None = None,
) -> list[tuple[str, str, str]]:
    """An intent's examples (``spans``: their mentions, by place, when given)."""
    if items is None:
        return []
    if not isinstance(items, list):
        problems.append((0, f"{where}: must be a list"))
        return []
    out = []
    for j, example in enumerate(items):
        text = _text(example)
        if text is None:
            problems.append((0, f"{where}[{j}]: an example needs a 'text' string"))
        else:
            out.append((f"{where}[{j}].text", text, "train"))
            if spans is not None and (found := watson_spans(example)):
                spans[f"{where}[{j}].text"] = found
    return out


def read(doc: Any, language: str | None = None) -> AgentDoc:
    root, at = _root(doc)
    problems: list[tuple[int, str]] = []
    lang = root.get("language", doc.get("language", ""))
    lang = pick_language(language, lang if isinstance(lang, str) else "", [], problems)
    intents = []
    for i, item in enumerate(root.get("intents") or []):
        where = f"{at}intents[{i}]"
        name = as_text(item.get("intent")) if isinstance(item, dict) else None
        if name is None:
            problems.append((0, f"{where}: an intent needs an 'intent' name"))
            continue
        description = item.get("description")
        intent = PlatformIntent(name, where, description if isinstance(description, str) else "")
        intent.phrases = _examples(
            item.get("examples"), f"{where}.examples", problems, intent.spans
        )
        intents.append(intent)
    counter = _examples(root.get("counterexamples"), f"{at}counterexamples", problems)
    intents.append(PlatformIntent(COUNTEREXAMPLES, f"{at}counterexamples", "", True, counter))
    return AgentDoc(intents, lang, problems=problems, values=watson_values(root))


def skeleton(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "description": "",
        "language": "en",
        "intents": [],
        "entities": [],
        "counterexamples": [],
        "dialog_nodes": [],
        "metadata": {"api_version": {"major_version": "v2", "minor_version": "2018-11-08"}},
        "learning_opt_out": False,
    }


def _example(text: str, split: str) -> dict[str, Any]:
    return {"text": text}


def _maker(plan: ExportPlan, made: list[EntitySpan]) -> Any:
    """Makes the examples an export adds, each with its mentions."""

    def make(text: str, split: str) -> dict[str, Any]:
        spans = plan.spans(text)
        made.extend(spans)
        return {"text": text, "mentions": watson_mentions(text, spans)} if spans else {"text": text}

    return make


def _carried(moved: Relabelled, into: str) -> Any:
    return lambda text: [copy.deepcopy(r) for r in moved.phrases(text, into)]


def apply(doc: Any, plan: ExportPlan) -> Any:
    new = copy.deepcopy(doc)
    root, _ = _root(new)
    intents = []
    # an example's mentions name entities of the skill: a relabelled one keeps them
    moved = Relabelled(
        plan,
        {str(i.get("intent")): list(i.get("examples") or []) for i in root.get("intents") or []},
        _text,
    )
    made: list[EntitySpan] = []
    make = _maker(plan, made)
    for item in root.get("intents") or []:
        name = item.get("intent")
        if name in plan.dropped:
            continue
        p = plan.intents.get(name)
        if p is not None and p.texts is not None:
            item["examples"] = merge_phrases(
                item.get("examples") or [], _text, p.texts, make, _carried(moved, name)
            )
            set_description(item, "description", p.description)
        intents.append(item)
    for name in plan.new:
        p = plan.intents[name]
        examples = merge_phrases([], _text, p.texts or [], make, _carried(moved, name))
        item = {"intent": name, "examples": examples}
        set_description(item, "description", p.description)
        intents.append(item)
    root["intents"] = intents
    named = {s.entity for s in made}
    types = plan.entity_types()
    watson_declare(root, {e: v for e, v in types.items() if e in named or plan.values.get(e)})
    plan.notes += left_out_note(
        "role(s) of entity annotations",
        [f"{s.role!r} ({s.entity})" for s in made if s.role],
        "Watson mentions have no roles",
    )
    counter = plan.texts_of(COUNTEREXAMPLES)
    if counter is not None:
        root["counterexamples"] = merge_phrases(
            root.get("counterexamples") or [], _text, counter, _example
        )
        plan.notes += left_out_note(
            "entity annotation(s) of counterexamples",
            [
                f"{t[s.start : s.end]!r} ({s.entity} in {t[:40]!r})"
                for t, _ in counter
                for s in plan.spans(t)
            ],
            "a Watson counterexample is its text alone",
        )
    return new


FORMAT = AgentFormat(
    name="watson",
    title="Watson Assistant skill",
    container="json",
    detect=detect,
    read=read,
    skeleton=skeleton,
    apply=apply,
    # Unicode letters and digits, '_', '-', '.'; not starting with the reserved 'sys-'.
    name_rule=lambda n: name_with(lambda c: c.isalnum() or c in "_-.", limit=128)(n).removeprefix(
        "sys-"
    ),
)
