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

The one-file agent is :mod:`app.formats.agents.dialogflow_cx_json`; entity annotations, the
intents' parameters and the entity types are :mod:`app.formats.agents.dialogflow_entities`'.

Example:
    >>> files = {"agent.json": b'{"defaultLanguageCode": "en"}',
    ...          "intents/hi/hi.json": b'{"displayName": "hi"}',
    ...          "intents/hi/trainingPhrases/en.json": b'{"trainingPhrases": [{"parts": [{"text": "hey"}]}]}'}
    >>> detect(files), read(files).intents[0].phrases
    (True, [('intents/hi/trainingPhrases/en.json[0]', 'hey', 'train')])
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
    text_key,
)
from app.formats.agents.dialogflow_entities import (
    CxParameters,
    cx_entity_files,
    cx_parameter_types,
    cx_parts,
    cx_spans,
    cx_values,
)
from app.formats.agents.dialogflow_es import agent_language, agent_root, carrier
from app.formats.agents.dialogflow_es import phrase_text as es_phrase_text
from app.formats.agents.export import (
    LOST_PART,
    AgentFormat,
    ExportPlan,
    Relabelled,
    merge_phrases,
    set_description,
)
from app.formats.common import FormatError
from app.formats.file_names import NAME_INSIDE, device_note, safe_file_name

Files = dict[str, bytes]
NEGATIVE = "Default Negative Intent"


def phrase_text(phrase: Any) -> str | None:
    """The text of a phrase: its ``parts``' texts joined."""
    return es_phrase_text(phrase, "parts")


class _NewPhrase:
    """Makes the phrases an export adds into one intent (:meth:`into`), each with its parts
    naming their parameters, and adds to the intent the parameters they name
    (:meth:`declare`)."""

    def __init__(self, plan: ExportPlan, inline: bool) -> None:
        self.plan, self.inline = plan, inline
        self.parameters = CxParameters({})

    def into(self, obj: Any, texts: list[tuple[str, str]], kept: list[Any]) -> None:
        """The intent whose phrases are made next (``texts``: its phrases in the project,
        ``kept``: those it holds already)."""
        had = {text_key(phrase_text(x) or "") for x in kept}
        spans = [s for t, _ in texts if t not in had for s in self.plan.spans(t)]
        self.parameters = CxParameters(obj, spans)

    def declare(self, obj: dict[str, Any]) -> None:
        self.parameters.declare(obj)

    def __call__(self, text: str, split: str) -> dict[str, Any]:
        spans = self.plan.spans(text)
        phrase: dict[str, Any] = {
            "id": new_id("phrase", text),
            "parts": cx_parts(text, spans, self.parameters.id_of),
            "repeatCount": 1,
        }
        if not self.inline or self.plan.language:
            phrase["languageCode"] = self.plan.language
        return phrase


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
    intent: PlatformIntent,
    items: Any,
    where: str,
    problems: list[tuple[int, str]],
    lang: str,
    types: dict[str, str],
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
            if spans := cx_spans(phrase, types):
                intent.spans[f"{where}[{j}]"] = spans


# --- the JSON package (zip or folder) ----------------------------------------------------------


def _intent_files(files: Files, root: str) -> list[str]:
    pattern = re.compile(re.escape(root) + r"intents/([^/]+)/([^/]+)\.json")
    return [p for p in files if (m := pattern.fullmatch(p)) and m.group(1) == m.group(2)]


def detect(files: Files) -> bool:
    root = agent_root(files)
    return root is not None and (
        bool(_intent_files(files, root)) or any(p.startswith(root + "flows/") for p in files)
    )


def _said(path: str, lang: str) -> str:
    return f"{path.rsplit('/', 1)[0]}/trainingPhrases/{lang}.json"


def _listed(value: Any) -> Any:
    return value.get("trainingPhrases") if isinstance(value, dict) else value


def read(files: Files, language: str | None = None) -> AgentDoc:
    root = agent_root(files)
    assert root is not None
    problems: list[tuple[int, str]] = []
    have = {m.group(1) for p in files if (m := re.search(r"/trainingPhrases/([^/]+)\.json$", p))}
    default = agent_language(files, root, "defaultLanguageCode")
    lang = pick_language(language, default, have, problems)
    intents = []
    for path in _intent_files(files, root):
        try:
            obj = load_json(files[path], path)
            intent = _intent(obj, path, problems)
            said = _said(path, lang)
            if intent is not None and said in files:
                listed = _listed(load_json(files[said], said))
                _phrases(intent, listed, said, problems, lang, cx_parameter_types(obj))
        except FormatError as exc:
            problems += exc.problems or [(0, exc.summary)]
            continue
        if intent is not None:
            intents.append(intent)
    return AgentDoc(intents, lang, problems=problems, values=cx_values(files, root, lang))


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
    return carrier(moved, _moved)


def apply(files: Files, plan: ExportPlan) -> Files:
    root = agent_root(files)
    assert root is not None
    out = dict(files)
    make = _NewPhrase(plan, inline=False)
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
        said = said_in[path]
        kept = kept_in.get(path)
        make.into(obj, p.texts, _listed(kept) or [])
        phrases = merge_phrases(
            _listed(kept) or [], phrase_text, p.texts, make, carried(name, _parameters(obj))
        )
        make.declare(obj)
        out[path] = same_or_dumped(obj, files[path])
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
        obj = _new_intent(name, p.description)
        make.into(obj, p.texts or [], [])
        phrases = merge_phrases([], phrase_text, p.texts or [], make, carried(name, set()))
        make.declare(obj)
        out[path] = dump_json(obj)
        if phrases:
            out[_said(path, plan.language)] = dump_json({"trainingPhrases": phrases})
    out.update(cx_entity_files(files, root, plan.language, plan.entity_types()))
    plan.notes += moved.note(LOST_PART) + device_note(devices, NAME_INSIDE)
    return out


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
