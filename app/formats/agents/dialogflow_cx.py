"""Dialogflow CX agent: the JSON package export (a zip or folder: ``agent.json``,
``intents/<name>/<name>.json``, ``intents/<name>/trainingPhrases/<lang>.json``, ``flows/``, ...) and
the single JSON file that lists ``intents`` with their ``trainingPhrases`` inline.

Read: each intent's ``displayName`` and ``description``, and its training phrases in the agent's
``defaultLanguageCode`` (a phrase's ``parts`` joined into one text). An intent with
``"isFallback": true`` (the Default Negative Intent) is ``out_of_scope``. Kept as they were: flows,
pages, entity types, webhooks, route groups, an intent's parameters and labels, the phrases of
other languages, and each phrase's parts, parameter ids and repeat count while its text is
unchanged (a phrase there twice stays twice), and a description whose text is unchanged (its
spaces included). A phrase the project relabelled keeps its id, parts and repeat count in its new
intent; a part naming a parameter the new intent lacks becomes plain text (and the export says
so).

Example:
    >>> doc = {"intents": [{"displayName": "hi", "trainingPhrases": [{"parts": [{"text": "hey"}]}]}]}
    >>> JSON_FORMAT.detect(doc), JSON_FORMAT.read(doc).intents[0].phrases
    (True, [('intents[0].trainingPhrases[0]', 'hey', 'train')])
"""

from __future__ import annotations

import copy
import re
from typing import Any

from app.formats.agents.base import (
    AgentDoc,
    PlatformIntent,
    as_text,
    dump_json,
    load_json,
    name_with,
    new_id,
    pick_language,
    same_or_dumped,
)
from app.formats.agents.dialogflow_es import agent_root, safe_file_name
from app.formats.agents.export import (
    LOST_PART,
    AgentFormat,
    ExportPlan,
    Relabelled,
    merge_phrases,
    set_description,
)
from app.formats.common import FormatError
from app.formats.file_names import NAME_INSIDE, device_note

Files = dict[str, bytes]
NEGATIVE = "Default Negative Intent"


def phrase_text(phrase: Any) -> str | None:
    parts = phrase.get("parts") if isinstance(phrase, dict) else None
    if not isinstance(parts, list) or not all(isinstance(p, dict) for p in parts):
        return None
    texts = [p.get("text", "") for p in parts]
    return "".join(texts) if all(isinstance(t, str) for t in texts) else None


def _new_phrase(lang: str, inline: bool) -> Any:
    def make(text: str, split: str) -> dict[str, Any]:
        phrase: dict[str, Any] = {
            "id": new_id("phrase", text),
            "parts": [{"text": text}],
            "repeatCount": 1,
        }
        if not inline or lang:
            phrase["languageCode"] = lang
        return phrase

    return make


def _intent(obj: Any, where: str, problems: list[tuple[int, str]]) -> PlatformIntent | None:
    name = as_text(obj.get("displayName")) if isinstance(obj, dict) else None
    if name is None:
        problems.append((0, f"{where}: an intent needs a 'displayName' string"))
        return None
    described = obj.get("description")
    return PlatformIntent(
        name,
        where,
        described if isinstance(described, str) else "",
        fallback=obj.get("isFallback") is True,
    )


def _phrases(
    intent: PlatformIntent, items: Any, where: str, problems: list[tuple[int, str]], lang: str
) -> None:
    if not isinstance(items, list):
        problems.append((0, f"{where}: must be a list of training phrases"))
        return
    for j, phrase in enumerate(items):
        code = phrase.get("languageCode", lang) if isinstance(phrase, dict) else lang
        if code != lang:
            continue
        if (text := phrase_text(phrase)) is None:
            problems.append((0, f"{where}[{j}]: a phrase needs 'parts' with 'text'"))
        else:
            intent.phrases.append((f"{where}[{j}]", text, "train"))


# --- the JSON package (zip or folder) ----------------------------------------------------------


def _intent_files(files: Files, root: str) -> list[str]:
    pattern = re.compile(re.escape(root) + r"intents/([^/]+)/([^/]+)\.json")
    return [p for p in files if (m := pattern.fullmatch(p)) and m.group(1) == m.group(2)]


def detect(files: Files) -> bool:
    root = agent_root(files)
    return root is not None and (
        bool(_intent_files(files, root)) or any(p.startswith(root + "flows/") for p in files)
    )


def _language(files: Files, root: str) -> str:
    agent = load_json(files[root + "agent.json"], root + "agent.json")
    lang = agent.get("defaultLanguageCode") if isinstance(agent, dict) else None
    return lang if isinstance(lang, str) and lang else "en"


def _said(path: str, lang: str) -> str:
    return f"{path.rsplit('/', 1)[0]}/trainingPhrases/{lang}.json"


def _listed(value: Any) -> Any:
    return value.get("trainingPhrases") if isinstance(value, dict) else value


def read(files: Files, language: str | None = None) -> AgentDoc:
    root = agent_root(files)
    assert root is not None
    problems: list[tuple[int, str]] = []
    have = {m.group(1) for p in files if (m := re.search(r"/trainingPhrases/([^/]+)\.json$", p))}
    lang = pick_language(language, _language(files, root), have, problems)
    intents = []
    for path in _intent_files(files, root):
        try:
            intent = _intent(load_json(files[path], path), path, problems)
            said = _said(path, lang)
            if intent is not None and said in files:
                _phrases(intent, _listed(load_json(files[said], said)), said, problems, lang)
        except FormatError as exc:
            problems += exc.problems or [(0, exc.summary)]
            continue
        if intent is not None:
            intents.append(intent)
    return AgentDoc(intents, lang, problems=problems)


def skeleton(name: str) -> Files:
    agent = {"displayName": name, "defaultLanguageCode": "en", "timeZone": "Europe/London"}
    negative = {
        "name": "00000000-0000-0000-0000-000000000001",
        "displayName": NEGATIVE,
        "priority": 500000,
        "isFallback": True,
    }
    return {
        "agent.json": dump_json(agent),
        f"intents/{NEGATIVE}/{NEGATIVE}.json": dump_json(negative),
    }


def _new_intent(name: str, description: str | None) -> dict[str, Any]:
    intent: dict[str, Any] = {"name": new_id("intent", name), "displayName": name}
    intent["priority"] = 500000
    if description:
        intent["description"] = description
    return intent


def _parameters(obj: Any) -> set[str]:
    """The parameter ids of an intent (what a phrase part's ``parameterId`` names)."""
    found = obj.get("parameters") if isinstance(obj, dict) else None
    return {str(p.get("id")) for p in found or [] if isinstance(p, dict)}


def _moved(phrase: dict[str, Any], parameters: set[str], into: str, lost: list[str]) -> Any:
    """A phrase relabelled into an intent with ``parameters``: its id, parts and repeat count
    kept; a part naming a parameter the intent lacks becomes plain text (said in ``lost``)."""
    phrase = copy.deepcopy(phrase)
    gone = []
    for part in phrase.get("parts") or []:
        if (pid := part.get("parameterId")) is not None and pid not in parameters:
            gone.append(str(pid))
            del part["parameterId"]
    if gone:
        lost.append(f"{phrase_text(phrase)!r} ({', '.join(gone)} in {into!r})")
    return phrase


def _carrier(moved: Relabelled) -> Any:
    """``carried(into, parameters)`` for :func:`merge_phrases`: the phrases ``into`` takes over."""

    def carried(into: str, parameters: set[str]) -> Any:
        return lambda text: [
            _moved(p, parameters, into, moved.lost) for p in moved.phrases(text, into)
        ]

    return carried


def apply(files: Files, plan: ExportPlan) -> Files:
    root = agent_root(files)
    assert root is not None
    out = dict(files)
    make = _new_phrase(plan.language, inline=False)
    taken = set()
    intents = {path: load_json(files[path], path) for path in _intent_files(files, root)}
    said_in = {path: _said(path, plan.language) for path in intents}
    kept_in = {
        path: load_json(files[said_in[path]], said_in[path])
        for path in intents
        if said_in[path] in files
    }
    moved = Relabelled(
        plan,
        {intents[path]["displayName"]: _listed(kept) or [] for path, kept in kept_in.items()},
        phrase_text,
    )
    carried = _carrier(moved)
    for path, obj in intents.items():
        folder = path.rsplit("/", 1)[0] + "/"
        taken.add(folder[len(root) + len("intents/") : -1].casefold())
        name = obj["displayName"]
        if name in plan.dropped:
            for gone in [q for q in out if q.startswith(folder)]:
                del out[gone]
            continue
        p = plan.intents.get(name)
        if p is None or p.texts is None:
            continue
        set_description(obj, "description", p.description)
        out[path] = same_or_dumped(obj, files[path])
        said = said_in[path]
        kept = kept_in.get(path)
        phrases = merge_phrases(
            _listed(kept) or [], phrase_text, p.texts, make, carried(name, _parameters(obj))
        )
        value = {**kept, "trainingPhrases": phrases} if isinstance(kept, dict) else phrases
        if not isinstance(kept, list | dict):
            value = {"trainingPhrases": phrases}
        if phrases:
            out[said] = same_or_dumped(value, files.get(said))
        else:
            out.pop(said, None)
    devices: list[tuple[str, str]] = []
    for name in plan.new:
        folder = safe_file_name(name, taken, devices)
        path = f"{root}intents/{folder}/{folder}.json"
        p = plan.intents[name]
        out[path] = dump_json(_new_intent(name, p.description))
        if phrases := merge_phrases([], phrase_text, p.texts or [], make, carried(name, set())):
            out[_said(path, plan.language)] = dump_json({"trainingPhrases": phrases})
    plan.notes += moved.note(LOST_PART) + device_note(devices, NAME_INSIDE)
    return out


# --- the single JSON file ----------------------------------------------------------------------


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
        _phrases(intent, said, f"intents[{i}].trainingPhrases", problems, lang)
        intents.append(intent)
    return AgentDoc(intents, lang, problems=problems)


def json_apply(doc: Any, plan: ExportPlan) -> Any:
    new = copy.deepcopy(doc)
    make = _new_phrase(plan.language, inline=True)

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
            merged = merge_phrases(
                ours, phrase_text, p.texts, make, carried(name, _parameters(obj))
            )
            kept = {id(x) for x in merged} | {id(x) for x in said if not any(x is y for y in ours)}
            obj["trainingPhrases"] = [x for x in said if id(x) in kept] + [
                x for x in merged if not any(x is y for y in said)
            ]
            set_description(obj, "description", p.description)
        intents.append(obj)
    for name in plan.new:
        p = plan.intents[name]
        obj = _new_intent(name, p.description)
        obj["trainingPhrases"] = merge_phrases(
            [], phrase_text, p.texts or [], make, carried(name, set())
        )
        intents.append(obj)
    new["intents"] = intents
    plan.notes += moved.note(LOST_PART)
    return new


def json_skeleton(name: str) -> dict[str, Any]:
    negative = {"displayName": NEGATIVE, "isFallback": True, "trainingPhrases": []}
    return {"displayName": name, "defaultLanguageCode": "en", "intents": [negative]}


_NAME = name_with(lambda c: c.isprintable() and c not in "|/", limit=100)
FORMAT = AgentFormat(
    name="dialogflow-cx",
    title="Dialogflow CX agent",
    container="zip",
    detect=detect,
    read=read,
    skeleton=skeleton,
    apply=apply,
    name_rule=_NAME,
)
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
