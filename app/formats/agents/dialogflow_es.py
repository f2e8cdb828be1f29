"""Dialogflow ES agent zip: ``agent.json``, ``package.json``, ``intents/<name>.json`` and
``intents/<name>_usersays_<lang>.json`` (the training phrases of one language).

Read: each intent's ``name`` and, in the agent's ``language``, its training phrases: a phrase's
``data`` parts joined into one text (an annotated part, ``{"text": "Paris", "meta": "@sys.geo-city"}``,
gives its text). An intent with ``"fallbackIntent": true`` is ``out_of_scope`` (its phrases are the
agent's negative examples). Kept as they were: ``agent.json`` and every other file (entities,
responses, contexts, events, webhooks), the phrases of other languages, and each phrase's parts,
ids and annotations while its text is unchanged (a phrase there twice stays twice). A phrase the
project relabelled keeps its id and parts in its new intent; an annotation naming a parameter
the new intent lacks becomes plain text (and the export says so). ES intents have no
description: an export leaves ours out (and says so).

Example:
    >>> files = {"agent.json": b'{"language": "en"}', "intents/hi.json": b'{"name": "hi"}',
    ...          "intents/hi_usersays_en.json": b'[{"data": [{"text": "hello"}]}]'}
    >>> detect(files), read(files).intents[0].phrases
    (True, [('intents/hi_usersays_en.json[0]', 'hello', 'train')])
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from typing import Any

from app.formats.agents.base import (
    AgentDoc,
    PlatformIntent,
    dump_json,
    load_intent,
    load_json,
    name_with,
    new_id,
    pick_language,
    same_or_dumped,
)
from app.formats.agents.dialogflow_entities import (
    es_entity_files,
    es_parameters,
    es_parts,
    es_spans,
    es_values,
)
from app.formats.agents.export import (
    LOST_PART,
    AgentFormat,
    ExportPlan,
    Relabelled,
    merge_phrases,
)
from app.formats.common import FormatError
from app.formats.file_names import NAME_INSIDE, device_note, safe_file_name
from core.slots import EntitySpan

Files = dict[str, bytes]


def agent_root(files: Files) -> str | None:
    """The folder (``""`` or ``"name/"``) of the least deep ``agent.json``, or None."""
    found = [p for p in files if p == "agent.json" or p.endswith("/agent.json")]
    if not found:
        return None
    return min(found, key=lambda p: (p.count("/"), p))[: -len("agent.json")]


def _intent_files(files: Files, root: str) -> list[str]:
    """The ``intents/<name>.json`` files (usersays files left out), in the zip's order."""
    out = []
    for p in files:
        rest = p[len(root) + len("intents/") :] if p.startswith(root + "intents/") else ""
        if rest.endswith(".json") and "/" not in rest and "_usersays_" not in rest:
            out.append(p)
    return out


def detect(files: Files) -> bool:
    root = agent_root(files)
    if root is None:
        return False
    nested = any(re.match(re.escape(root) + r"intents/[^/]+/", p) for p in files)
    return not nested and not any(p.startswith(root + "flows/") for p in files)


def agent_language(files: Files, root: str, key: str = "language") -> str:
    """The agent's language as its ``agent.json`` names it under ``key`` (ES ``language``, CX
    ``defaultLanguageCode``); ``en`` when it names none."""
    agent = load_json(files[root + "agent.json"], root + "agent.json")
    lang = agent.get(key) if isinstance(agent, dict) else None
    return lang if isinstance(lang, str) and lang else "en"


def phrase_text(phrase: Any, key: str = "data") -> str | None:
    """The text of a phrase: the texts of its ``key`` parts joined (ES ``data``, CX ``parts``)."""
    parts = phrase.get(key) if isinstance(phrase, dict) else None
    if not isinstance(parts, list) or not all(isinstance(p, dict) for p in parts):
        return None
    texts = [p.get("text", "") for p in parts]
    return "".join(texts) if all(isinstance(t, str) for t in texts) else None


def _usersays(path: str, lang: str) -> str:
    return f"{path[: -len('.json')]}_usersays_{lang}.json"


def _languages(files: Files) -> set[str]:
    return {m.group(1) for p in files if (m := re.search(r"_usersays_([^/]+)\.json$", p))}


def read(files: Files, language: str | None = None) -> AgentDoc:
    root = agent_root(files)
    assert root is not None
    problems: list[tuple[int, str]] = []
    lang = pick_language(language, agent_language(files, root), _languages(files), problems)
    intents = []
    for path in _intent_files(files, root):
        if (found := load_intent(files, path, "name", problems)) is None:
            continue
        obj, name = found
        intent = PlatformIntent(name, path, fallback=obj.get("fallbackIntent") is True)
        said = _usersays(path, lang)
        if said in files:
            try:
                phrases = load_json(files[said], said)
            except FormatError as exc:
                problems += exc.problems or [(0, exc.summary)]
                continue
            if not isinstance(phrases, list):
                problems.append((0, f"{said}: must be a list of training phrases"))
                phrases = []
            for j, phrase in enumerate(phrases):
                if (text := phrase_text(phrase)) is None:
                    problems.append((0, f"{said}[{j}]: a phrase needs 'data' parts with 'text'"))
                else:
                    intent.phrases.append((f"{said}[{j}]", text, "train"))
                    if spans := es_spans(phrase):
                        intent.spans[f"{said}[{j}]"] = spans
        intents.append(intent)
    others = sorted(_languages(files) - {lang})
    notes = [f"Kept the phrases in {', '.join(others)} as they are."] if others else []
    return AgentDoc(intents, lang, notes, problems, es_values(files, root, lang))


class _NewPhrase:
    """Makes the phrases an export adds, each with its annotated parts, and remembers the
    spans of those it made (the intent's parameters they need)."""

    def __init__(self, plan: ExportPlan) -> None:
        self.plan = plan
        self.spans: list[EntitySpan] = []

    def __call__(self, text: str, split: str) -> dict[str, Any]:
        spans = self.plan.spans(text)
        self.spans += spans
        return {
            "id": new_id("phrase", text),
            "data": es_parts(text, spans),
            "isTemplate": False,
            "count": 0,
            "lang": self.plan.language,
            "updated": 0,
        }


def _new_intent(name: str, *, fallback: bool = False) -> dict[str, Any]:
    return {
        "id": new_id("intent", name),
        "name": name,
        "auto": True,
        "contexts": [],
        "responses": [
            {
                "resetContexts": False,
                "action": "input.unknown" if fallback else "",
                "affectedContexts": [],
                "parameters": [],
                "messages": [],
                "speech": [],
            }
        ],
        "priority": 500000,
        "webhookUsed": False,
        "webhookForSlotFilling": False,
        "fallbackIntent": fallback,
        "events": [],
        "conditionalResponses": [],
        "condition": "",
        "conditionalFollowupEvents": [],
    }


def skeleton(name: str) -> Files:
    agent = {
        "description": "",
        "language": "en",
        "supportedLanguages": [],
        "displayName": name,
        "apiVersion": "v2",
        "enableOnePlatformApi": True,
        "onePlatformApiVersion": "v2",
        "mlMinConfidence": 0.3,
    }
    return {
        "agent.json": dump_json(agent),
        "package.json": dump_json({"version": "1.0.0"}),
        "intents/Default Fallback Intent.json": dump_json(
            _new_intent("Default Fallback Intent", fallback=True)
        ),
    }


def _parameters(obj: Any) -> set[str]:
    """The parameter names of an intent (what an annotated part's ``alias`` names)."""
    responses = obj.get("responses") if isinstance(obj, dict) else None
    return {
        str(p.get("name"))
        for r in responses or []
        if isinstance(r, dict)
        for p in r.get("parameters") or []
        if isinstance(p, dict)
    }


def _moved(phrase: dict[str, Any], parameters: set[str], into: str, lost: list[str]) -> Any:
    """A phrase relabelled into an intent with ``parameters``: its id and parts kept; a part
    annotated with a parameter the intent lacks becomes plain text (said in ``lost``)."""
    phrase = copy.deepcopy(phrase)
    gone = []
    for part in phrase.get("data") or []:
        alias = part.get("alias")
        if alias is not None and alias not in parameters:
            gone.append(str(alias))
            for key in ("alias", "meta"):
                part.pop(key, None)
            part["userDefined"] = False
    if gone:
        lost.append(f"{phrase_text(phrase)!r} ({', '.join(gone)} in {into!r})")
    return phrase


def carrier(moved: Relabelled, move: Callable[[Any, set[str], str, list[str]], Any]) -> Any:
    """``carried(into, parameters)`` for :func:`merge_phrases`: the phrases ``into`` takes over,
    each through ``move`` (what a relabelled phrase keeps in an intent with ``parameters``)."""

    def carried(into: str, parameters: set[str]) -> Any:
        return lambda text: [
            move(p, parameters, into, moved.lost) for p in moved.phrases(text, into)
        ]

    return carried


def apply(files: Files, plan: ExportPlan) -> Files:
    root = agent_root(files)
    assert root is not None
    out = dict(files)
    make = _NewPhrase(plan)
    taken = set()
    intents = {path: load_json(files[path], path) for path in _intent_files(files, root)}
    said_in = {path: _usersays(path, plan.language) for path in intents}
    moved = Relabelled(
        plan,
        {
            obj["name"]: load_json(files[said_in[path]], said_in[path])
            for path, obj in intents.items()
            if said_in[path] in files
        },
        phrase_text,
    )
    carried = carrier(moved, _moved)
    for path, obj in intents.items():
        taken.add(path[len(root) + len("intents/") : -len(".json")].casefold())
        name = obj["name"]
        if name in plan.dropped:
            stem = path[: -len(".json")]
            for gone in [q for q in out if q == path or q.startswith(stem + "_usersays_")]:
                del out[gone]
            continue
        texts = plan.texts_of(name)
        if texts is None:
            continue
        said = said_in[path]
        kept = load_json(files[said], said) if said in files else []
        make.spans = []
        phrases = merge_phrases(kept, phrase_text, texts, make, carried(name, _parameters(obj)))
        if es_parameters(obj, make.spans):
            out[path] = dump_json(obj)
        if phrases:
            out[said] = same_or_dumped(phrases, files.get(said))
        else:
            out.pop(said, None)
    devices: list[tuple[str, str]] = []
    for name in plan.new:
        path = f"{root}intents/{safe_file_name(name, taken, devices)}.json"
        make.spans = []
        phrases = merge_phrases(
            [], phrase_text, plan.texts_of(name) or [], make, carried(name, set())
        )
        obj = _new_intent(name)
        es_parameters(obj, make.spans)
        out[path] = dump_json(obj)
        if phrases:
            out[_usersays(path, plan.language)] = dump_json(phrases)
    out.update(es_entity_files(files, root, plan.language, plan.entity_types()))
    plan.notes += moved.note(LOST_PART) + device_note(devices, NAME_INSIDE)
    if n := sum(1 for p in plan.intents.values() if p.description):
        plan.notes.append(
            f"Left out {n} intent description(s): Dialogflow ES has no place for them."
        )
    return out


FORMAT = AgentFormat(
    name="dialogflow-es",
    title="Dialogflow ES agent",
    container="zip",
    detect=detect,
    read=read,
    skeleton=skeleton,
    apply=apply,
    name_rule=name_with(lambda c: c.isprintable() and c not in "|", limit=100),
)
