"""Entity annotations where a platform labels an utterance by offsets: LUIS, CLU and Watson
(issue 66 item 1). Offsets are UTF-16 code units on all three (:mod:`app.formats.agents.entities`).

- LUIS: ``utterances[].entities``: ``{"entity", "startPos", "endPos"}`` (``endPos`` the last
  unit, inclusive), a ``role`` where it has one; the app's ``entities`` declare the
  machine-learned entities (with their ``roles``). A LUIS app labels machine-learned entities
  only, so an entity type's values and synonyms (its ``closedLists`` are other entities) are
  read from its closed lists and, written, left out and named.
- CLU: ``assets.utterances[].entities``: ``{"category", "offset", "length"}``; ``assets.entities``
  declares each, its values and synonyms as its list component (``list.sublists``: ``listKey``
  and, per language, ``values``). CLU has no roles: a role is left out and named.
- Watson: an example's ``mentions``: ``{"entity", "location": [start, end]}``; ``entities``
  declares each, with its values (``{"type": "synonyms", "value", "synonyms"}``). No roles.

Example:
    >>> text = "fly to Berlin"
    >>> luis_labels(text, [EntitySpan(7, 13, "city", role="to")])
    [{'entity': 'city', 'startPos': 7, 'endPos': 12, 'children': [], 'role': 'to'}]
    >>> luis_spans({"text": text, "entities": luis_labels(text, [EntitySpan(7, 13, "city")])})
    [EntitySpan(start=7, end=13, entity='city', value=None, role=None, group=None)]
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from app.formats.agents.entities import fits, from_utf16, to_utf16
from core.slots import EntitySpan

Values = dict[str, dict[str, list[str]]]


def _span(text: str, start16: Any, end16: Any, entity: Any, role: Any = None) -> EntitySpan | None:
    """A span from UTF-16 offsets (``end16`` exclusive); None when it does not fit the text."""
    if not isinstance(entity, str) or not all(
        isinstance(x, int) and not isinstance(x, bool) for x in (start16, end16)
    ):
        return None
    start, end = from_utf16(text, start16), from_utf16(text, end16)
    if start < 0 or end <= start:
        return None
    return EntitySpan(start, end, entity, role=role if isinstance(role, str) and role else None)


def _sorted(text: str, found: list[EntitySpan | None]) -> list[EntitySpan]:
    spans = sorted((s for s in found if s is not None), key=lambda s: s.start)
    return spans if fits(text, spans) else []


def _labelled(
    u: Any, key: str, span: Callable[[str, dict[str, Any]], EntitySpan | None]
) -> list[EntitySpan]:
    """An utterance's labels (its ``key`` list, each read by ``span(text, label)``) as spans in
    its ``text``: none when it lacks either, or when they do not fit the text together."""
    text = u.get("text") if isinstance(u, dict) else None
    labels = u.get(key) if isinstance(u, dict) else None
    if not isinstance(text, str) or not isinstance(labels, list):
        return []
    return _sorted(text, [span(text, e) for e in labels if isinstance(e, dict)])


# --- LUIS --------------------------------------------------------------------------------------


def luis_spans(u: Any) -> list[EntitySpan]:
    """A LUIS utterance's entity labels as spans (nested children left to the app)."""
    return _labelled(u, "entities", _luis_span)


def _luis_span(text: str, e: dict[str, Any]) -> EntitySpan | None:
    end = e.get("endPos")
    end = end + 1 if isinstance(end, int) and not isinstance(end, bool) else None
    return _span(text, e.get("startPos"), end, e.get("entity"), e.get("role"))


def luis_labels(text: str, spans: Sequence[EntitySpan]) -> list[dict[str, Any]]:
    out = []
    for s in spans:
        label: dict[str, Any] = {
            "entity": s.entity,
            "startPos": to_utf16(text, s.start),
            "endPos": to_utf16(text, s.end) - 1,
            "children": [],
        }
        if s.role:
            label["role"] = s.role
        out.append(label)
    return out


def luis_values(doc: Any) -> Values:
    """The app's closed lists: canonical form -> its list."""
    out: Values = {}
    for c in doc.get("closedLists") or [] if isinstance(doc, dict) else []:
        if isinstance(c, dict) and isinstance(c.get("name"), str):
            mine = out.setdefault(c["name"], {})
            for sub in c.get("subLists") or []:
                if isinstance(sub, dict) and isinstance(sub.get("canonicalForm"), str):
                    words = [w for w in sub.get("list") or [] if isinstance(w, str)]
                    mine.setdefault(sub["canonicalForm"], []).extend(words)
    return out


def luis_declare(doc: dict[str, Any], spans: Sequence[EntitySpan]) -> list[str]:
    """Declare in the app the machine-learned entities (and roles) the spans name; the names
    of those it cannot label (another kind of entity already holds the name)."""
    others = {
        str(e.get("name"))
        for key in ("closedLists", "prebuiltEntities", "regex_entities", "patternAnyEntities")
        for e in doc.get(key) or []
        if isinstance(e, dict)
    }
    entities = doc.setdefault("entities", [])
    by_name = {e.get("name"): e for e in entities if isinstance(e, dict)}
    refused = []
    for s in spans:
        if s.entity in others:
            refused.append(s.entity)
            continue
        entity = by_name.get(s.entity)
        if entity is None:
            entity = by_name[s.entity] = {
                "name": s.entity,
                "roles": [],
                "children": [],
                "features": [],
            }
            entities.append(entity)
        if s.role and s.role not in entity.setdefault("roles", []):
            entity["roles"].append(s.role)
    return refused


# --- CLU ---------------------------------------------------------------------------------------


def clu_spans(u: Any) -> list[EntitySpan]:
    return _labelled(u, "entities", _clu_span)


def _clu_span(text: str, e: dict[str, Any]) -> EntitySpan | None:
    off, length = e.get("offset"), e.get("length")
    end = off + length if isinstance(off, int) and isinstance(length, int) else None
    return _span(text, off, end, e.get("category"))


def clu_labels(text: str, spans: Sequence[EntitySpan]) -> list[dict[str, Any]]:
    return [
        {
            "category": s.entity,
            "offset": to_utf16(text, s.start),
            "length": to_utf16(text, s.end) - to_utf16(text, s.start),
        }
        for s in spans
    ]


def clu_values(doc: Any, lang: str) -> Values:
    """The project's list components: list key -> its values in ``lang``."""
    out: Values = {}
    assets = doc.get("assets") if isinstance(doc, dict) else None
    for e in assets.get("entities") or [] if isinstance(assets, dict) else []:
        if not isinstance(e, dict) or not isinstance(e.get("category"), str):
            continue
        mine = out.setdefault(e["category"], {})
        listed: dict[str, Any] = e["list"] if isinstance(e.get("list"), dict) else {}
        for sub in listed.get("sublists") or []:
            if isinstance(sub, dict) and isinstance(sub.get("listKey"), str):
                words = [
                    w
                    for syn in sub.get("synonyms") or []
                    if isinstance(syn, dict)
                    and str(syn.get("language", lang)).lower() == lang.lower()
                    for w in syn.get("values") or []
                    if isinstance(w, str)
                ]
                mine.setdefault(sub["listKey"], []).extend(words)
    return out


def clu_declare(
    assets: dict[str, Any], types: Mapping[str, Mapping[str, Sequence[str]]], lang: str
) -> None:
    """Declare the entities the project names and the CLU project lacks, each with its values
    and synonyms as its list component."""
    have = {e.get("category") for e in assets.get("entities") or [] if isinstance(e, dict)}
    for name, values in types.items():
        if name in have:
            continue
        entities = assets.setdefault("entities", [])
        entity: dict[str, Any] = {"category": name, "compositionSetting": "combineComponents"}
        if values:
            entity["list"] = {
                "sublists": [
                    {"listKey": v, "synonyms": [{"language": lang, "values": [v, *words]}]}
                    for v, words in values.items()
                ]
            }
        entities.append(entity)


# --- Watson ------------------------------------------------------------------------------------


def watson_spans(example: Any) -> list[EntitySpan]:
    return _labelled(example, "mentions", _watson_span)


def _watson_span(text: str, m: dict[str, Any]) -> EntitySpan | None:
    at = m.get("location")
    if isinstance(at, list) and len(at) == 2:
        return _span(text, at[0], at[1], m.get("entity"))
    return None


def watson_mentions(text: str, spans: Sequence[EntitySpan]) -> list[dict[str, Any]]:
    return [
        {"entity": s.entity, "location": [to_utf16(text, s.start), to_utf16(text, s.end)]}
        for s in spans
    ]


def watson_values(root: Any) -> Values:
    out: Values = {}
    for e in root.get("entities") or [] if isinstance(root, dict) else []:
        if not isinstance(e, dict) or not isinstance(e.get("entity"), str):
            continue
        mine = out.setdefault(e["entity"], {})
        for v in e.get("values") or []:
            plain = isinstance(v, dict) and v.get("type", "synonyms") == "synonyms"
            if plain and isinstance(v.get("value"), str):
                words = [w for w in v.get("synonyms") or [] if isinstance(w, str)]
                mine.setdefault(v["value"], []).extend(words)
    return out


def watson_declare(root: dict[str, Any], types: Mapping[str, Mapping[str, Sequence[str]]]) -> None:
    """Declare the entities the project names and the skill lacks, with their values."""
    have = {e.get("entity") for e in root.get("entities") or [] if isinstance(e, dict)}
    for name, values in types.items():
        if name not in have:
            root.setdefault("entities", []).append(
                {
                    "entity": name,
                    "values": [
                        {"type": "synonyms", "value": v, "synonyms": list(words)}
                        for v, words in values.items()
                    ],
                    "fuzzy_match": True,
                }
            )
