"""Entity annotations in Dialogflow agents, ES and CX (issue 66 item 1).

- ES: an annotated part of a training phrase, ``{"text": "Paris", "alias": "city", "meta":
  "@sys.geo-city", "userDefined": true}``; the intent's parameter of that name
  (``responses[0].parameters``: ``dataType`` ``@sys.geo-city``, ``value`` ``$city``); a custom
  entity type in ``entities/<name>.json`` with its entries (value and synonyms) in
  ``entities/<name>_entries_<lang>.json``.
- CX: a part ``{"text": "Paris", "parameterId": "city"}``; the intent's parameter
  (``parameters``: ``{"id": "city", "entityType": "@sys.geo-city"}``); a custom entity type in
  ``entityTypes/<name>/<name>.json`` (``kind`` ``KIND_MAP``) with its entities (value and
  synonyms) in ``entityTypes/<name>/entities/<lang>.json``, or, in the one-file agent, in its
  ``entityTypes`` list.

A span's entity is the type without its ``@`` (``sys.geo-city``), its role the parameter's name
where that differs. System types (``sys.``) exist on the platform and are never written.

Example:
    >>> phrase = {"data": [{"text": "fly to "}, {"text": "Paris", "alias": "to", "meta": "@city"}]}
    >>> es_spans(phrase)
    [EntitySpan(start=7, end=12, entity='city', value=None, role='to', group=None)]
    >>> es_parts("fly to Paris", es_spans(phrase))[1]
    {'text': 'Paris', 'alias': 'to', 'meta': '@city', 'userDefined': True}
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from app.formats.agents.base import dump_json, load_json, new_id
from app.formats.agents.entities import from_pieces, pieces, role_of
from app.formats.common import FormatError
from app.formats.file_names import safe_file_name
from core.slots import EntitySpan

Files = dict[str, bytes]
Values = dict[str, dict[str, list[str]]]
SYS = "sys."


def _type(name: object) -> str | None:
    """An entity type named ``@city`` (or an entity type's resource name): ``city``."""
    if not isinstance(name, str) or not name.strip():
        return None
    return name.rsplit("/", 1)[-1].removeprefix("@") or None


def _entries(items: Any) -> dict[str, list[str]]:
    """Value -> synonyms of a list of ``{"value", "synonyms"}`` entries."""
    out: dict[str, list[str]] = {}
    for e in items if isinstance(items, list) else []:
        if isinstance(e, dict) and isinstance(e.get("value"), str):
            words = [w for w in e.get("synonyms") or [] if isinstance(w, str)]
            out.setdefault(e["value"], []).extend(words)
    return out


# --- ES ----------------------------------------------------------------------------------------


def es_spans(phrase: Any) -> list[EntitySpan]:
    """The annotated parts of an ES training phrase as spans."""
    parts = phrase.get("data") if isinstance(phrase, dict) else None
    found = []
    for p in parts if isinstance(parts, list) else []:
        if not isinstance(p, dict) or not isinstance(p.get("text"), str):
            return []
        entity = _type(p.get("meta"))
        alias = p.get("alias") if isinstance(p.get("alias"), str) else None
        found.append((p["text"], entity, alias if alias != entity else None))
    return from_pieces(found)


def es_parts(text: str, spans: Sequence[EntitySpan]) -> list[dict[str, Any]]:
    """An ES phrase's ``data`` parts for a text and its spans."""
    out: list[dict[str, Any]] = []
    for piece, span in pieces(text, spans):
        if span is None:
            out.append({"text": piece, "userDefined": False})
        else:
            alias = role_of(span)
            out.append(
                {"text": piece, "alias": alias, "meta": f"@{span.entity}", "userDefined": True}
            )
    return out


def es_values(files: Files, root: str, lang: str) -> Values:
    """The agent's custom entity types (not regexp, not composite) and their entries."""
    out: Values = {}
    for path in files:
        rest = path[len(root) + len("entities/") :] if path.startswith(root + "entities/") else ""
        if not rest.endswith(".json") or "/" in rest or "_entries_" in rest:
            continue
        try:
            obj = load_json(files[path], path)
        except FormatError:
            continue
        name = obj.get("name") if isinstance(obj, dict) else None
        if not isinstance(name, str) or obj.get("isRegexp") or obj.get("isEnum"):
            continue
        entries = files.get(f"{path[: -len('.json')]}_entries_{lang}.json")
        try:
            out[name] = _entries(load_json(entries, path)) if entries is not None else {}
        except FormatError:
            out[name] = {}
    return out


def es_parameters(obj: dict[str, Any], spans: Sequence[EntitySpan]) -> list[str]:
    """Add to an ES intent the parameters its new phrases' spans name and it lacks; their
    names (the intent is left as it was when it lacks none)."""
    if not spans:
        return []
    responses = obj.setdefault("responses", [])
    if not responses:
        responses.append({"parameters": []})
    params = responses[0].setdefault("parameters", [])
    have = {p.get("name") for p in params if isinstance(p, dict)}
    added = []
    for span in spans:
        name = role_of(span)
        if name in have:
            continue
        have.add(name)
        added.append(name)
        params.append(
            {
                "id": new_id("parameter", str(obj.get("name")), name),
                "name": name,
                "required": False,
                "dataType": f"@{span.entity}",
                "value": f"${name}",
                "isList": False,
            }
        )
    return added


def es_entity_files(
    files: Files, root: str, lang: str, types: Mapping[str, Mapping[str, Sequence[str]]]
) -> Files:
    """Files of the custom entity types the agent lacks (a type with its entries)."""
    have = set(es_values(files, root, lang)) | {
        str(load_json(files[p], p).get("name"))
        for p in files
        if p.startswith(root + "entities/") and p.endswith(".json") and "_entries_" not in p
    }
    out: Files = {}
    for name, values in types.items():
        if name in have or name.startswith(SYS):
            continue
        path = f"{root}entities/{name}"
        out[f"{path}.json"] = dump_json(
            {
                "id": new_id("entity", name),
                "name": name,
                "isOverridable": True,
                "isEnum": False,
                "isRegexp": False,
                "automatedExpansion": False,
                "allowFuzzyExtraction": False,
            }
        )
        entries = [{"value": v, "synonyms": [v, *words]} for v, words in values.items()]
        out[f"{path}_entries_{lang}.json"] = dump_json(entries)
    return out


# --- CX ----------------------------------------------------------------------------------------


def cx_parameter_types(obj: Any) -> dict[str, str]:
    """A CX intent's parameter id -> its entity type."""
    found = obj.get("parameters") if isinstance(obj, dict) else None
    out = {}
    for p in found if isinstance(found, list) else []:
        if isinstance(p, dict) and isinstance(p.get("id"), str):
            out[p["id"]] = _type(p.get("entityType")) or p["id"]
    return out


def cx_spans(phrase: Any, types: Mapping[str, str]) -> list[EntitySpan]:
    """The parts of a CX training phrase that name a parameter, as spans."""
    parts = phrase.get("parts") if isinstance(phrase, dict) else None
    found = []
    for p in parts if isinstance(parts, list) else []:
        if not isinstance(p, dict) or not isinstance(p.get("text"), str):
            return []
        pid = p.get("parameterId") if isinstance(p.get("parameterId"), str) else None
        entity = types.get(pid, pid) if pid else None
        found.append((p["text"], entity, pid if pid != entity else None))
    return from_pieces(found)


def cx_parts(
    text: str, spans: Sequence[EntitySpan], parameter: Callable[[EntitySpan], str] = role_of
) -> list[dict[str, Any]]:
    """A CX phrase's ``parts`` for a text and its spans (``parameter``: the id of a span's
    parameter)."""
    return [
        {"text": piece} if span is None else {"text": piece, "parameterId": parameter(span)}
        for piece, span in pieces(text, spans)
    ]


class CxParameters:
    """The parameters of one CX intent while an export writes new phrases into it. A span's part
    names the parameter of its role (or entity type), added to the intent where it lacks it. A
    CX parameter has one entity type, so a role the intent already gives another type (a Rasa
    bot's ``from``, a ``city`` and an ``iata``) gets a parameter of its own, ``from_iata``: the
    annotation keeps its entity type and comes back under that role (the export says so). A role
    the intent lacks goes to the type the new phrases give it most (``spans``: theirs)."""

    def __init__(self, obj: Any, spans: Sequence[EntitySpan] = ()) -> None:
        self.types = cx_parameter_types(obj)  # parameter id -> its entity type
        self.added: list[tuple[str, str]] = []
        self.prefer: dict[str, str] = {}  # a role -> the type its new phrases give it most
        for (name, entity), _ in Counter((role_of(s), s.entity) for s in spans).most_common():
            self.prefer.setdefault(name, entity)

    def id_of(self, span: EntitySpan) -> str:
        name = role_of(span)
        if name not in self.types:
            self.types[name] = self.prefer.get(name, span.entity)
            self.added.append((name, self.types[name]))
        pid, n = name, 1
        while self.types.get(pid, span.entity) != span.entity:
            n += 1
            pid = f"{name}_{re.sub(r'[^A-Za-z0-9_-]', '_', span.entity)}" + (
                f"_{n - 1}" if n > 2 else ""
            )
        if pid not in self.types:
            self.types[pid] = span.entity
            self.added.append((pid, span.entity))
        return pid

    def declare(self, obj: dict[str, Any]) -> None:
        """Add the parameters the new phrases named to the intent (left as it was when none)."""
        if self.added:
            params = obj.setdefault("parameters", [])
            params += [{"id": pid, "entityType": f"@{entity}"} for pid, entity in self.added]
            self.added = []


def _cx_types(files: Files, root: str) -> list[tuple[str, str, dict[str, Any]]]:
    """The package's entity types, of every kind: (folder, display name, the type's JSON)."""
    out = []
    for path in files:
        parts = path[len(root) :].split("/") if path.startswith(root) else []
        if len(parts) != 3 or parts[0] != "entityTypes" or parts[2] != f"{parts[1]}.json":
            continue
        try:
            obj = load_json(files[path], path)
        except FormatError:
            continue
        if isinstance(obj, dict) and isinstance(obj.get("displayName"), str):
            out.append((parts[1], obj["displayName"], obj))
    return out


def cx_values(files: Files, root: str, lang: str) -> Values:
    """The package's custom entity types that list values (``KIND_MAP``: not a regexp, not a
    list of other types) and their entities in ``lang``."""
    out: Values = {}
    for folder, name, obj in _cx_types(files, root):
        if obj.get("kind", "KIND_MAP") != "KIND_MAP":
            continue
        said = files.get(f"{root}entityTypes/{folder}/entities/{lang}.json")
        try:
            entities = load_json(said, folder).get("entities") if said is not None else []
        except (FormatError, AttributeError):
            continue
        out[name] = _entries(entities)
    return out


def cx_entity_type(name: str) -> dict[str, Any]:
    return {
        "name": new_id("entityType", name),
        "displayName": name,
        "kind": "KIND_MAP",
        "autoExpansionMode": "AUTO_EXPANSION_MODE_UNSPECIFIED",
    }


def cx_entity_files(
    files: Files, root: str, lang: str, types: Mapping[str, Mapping[str, Sequence[str]]]
) -> Files:
    """Files of the custom entity types the package lacks (one of any kind by that name is
    there: a regexp or a list type too, whose values an export does not write; CX refuses a
    second type of the same display name)."""
    have = {name for _, name, _ in _cx_types(files, root)}
    taken = {
        p[len(root) :].split("/")[1].casefold()
        for p in files
        if p.startswith(root + "entityTypes/")
    }
    out: Files = {}
    for name, values in types.items():
        if name in have or name.startswith(SYS):
            continue
        folder = safe_file_name(name, taken)
        at = f"{root}entityTypes/{folder}/"
        out[f"{at}{folder}.json"] = dump_json(cx_entity_type(name))
        entities = [
            {"value": v, "synonyms": [v, *words], "languageCode": lang}
            for v, words in values.items()
        ]
        out[f"{at}entities/{lang}.json"] = dump_json({"entities": entities})
    return out


def cx_json_values(doc: Any, lang: str) -> Values:
    """The one-file agent's custom entity types that list values (``KIND_MAP``) and their
    entities."""
    out: Values = {}
    for t in _cx_json_types(doc):
        if t.get("kind", "KIND_MAP") == "KIND_MAP":
            mine = [
                e
                for e in t.get("entities") or []
                if isinstance(e, dict) and e.get("languageCode", lang) == lang
            ]
            out[t["displayName"]] = _entries(mine)
    return out


def _cx_json_types(doc: Any) -> list[dict[str, Any]]:
    """The one-file agent's entity types, of every kind."""
    found = doc.get("entityTypes") if isinstance(doc, dict) else None
    return [
        t
        for t in (found if isinstance(found, list) else [])
        if isinstance(t, dict) and isinstance(t.get("displayName"), str)
    ]


def cx_json_entity_types(
    doc: dict[str, Any], lang: str, types: Mapping[str, Mapping[str, Sequence[str]]]
) -> None:
    """Add to the one-file agent the custom entity types it lacks (one of any kind by that name
    is there)."""
    have = {t["displayName"] for t in _cx_json_types(doc)}
    for name, values in types.items():
        if name in have or name.startswith(SYS):
            continue
        entities = [{"value": v, "synonyms": [v, *words]} for v, words in values.items()]
        doc.setdefault("entityTypes", []).append({**cx_entity_type(name), "entities": entities})
