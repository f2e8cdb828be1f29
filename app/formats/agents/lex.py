"""Amazon Lex V2 bot export zip: ``manifest.json``, ``<Bot>/Bot.json``,
``<Bot>/BotLocales/<locale>/BotLocale.json`` and ``.../Intents/<name>/Intent.json`` (its ``slots``,
slot types and custom vocabulary beside it).

Read: each intent's ``name``, ``description`` and ``sampleUtterances[].utterance`` in one locale
(the one with the most intents; the others are kept as they are). A slot reference stays in
the text as written (``book a {RoomType} room``), annotated as a reference to its slot and slot
type, and custom slot types' values join the slot book (:mod:`app.formats.agents.lex_slots`:
an export gives an intent the slots its new utterances' references name). An export writes a
reference to a slot the utterance's intent lacks and the project does not annotate (a typed
``Hi im {name}``) as plain text (``Hi im name``) and says so: Lex cannot build it otherwise. The
intent built on ``AMAZON.FallbackIntent`` is ``out_of_scope``; Lex allows it no utterances, so an
export leaves our ``out_of_scope`` examples out (and says so). Kept as they were: the bot and
locale settings, slots and their prompts, slot types, code hooks, closing and confirmation
settings, and every other locale.

Example:
    >>> files = {"manifest.json": b"{}", "B/BotLocales/en_US/Intents/Hi/Intent.json":
    ...          b'{"name": "Hi", "sampleUtterances": [{"utterance": "hello"}]}'}
    >>> detect(files), read(files).intents[0].phrases[0][1:]
    (True, ('hello', 'train'))
"""

from __future__ import annotations

import json
import re
from typing import Any

from app.formats.agents.base import (
    SHOW_NAMES,
    AgentDoc,
    PlatformIntent,
    as_text,
    dump_json,
    load_intent,
    load_json,
    name_with,
    pick_language,
    same_or_dumped,
)
from app.formats.agents.entities import left_out_note
from app.formats.agents.export import (
    AgentFormat,
    ExportPlan,
    merge_phrases,
    set_description,
)
from app.formats.agents.lex_slots import (
    NO_VALUES,
    add_slots,
    locale_values,
    needed_slots,
    reference_spans,
    slot_types,
    value_spans,
)
from app.formats.file_names import NAME_INSIDE, device_note, device_safe, is_device_name
from app.formats.rasa_entities import SLOT_REFERENCE

Files = dict[str, bytes]
FALLBACK_SIGNATURE = "AMAZON.FallbackIntent"
# The export's map of the intents Lex names otherwise than the project (``订披萨`` -> ``intent_2``)
# back to the project's names, beside manifest.json: {"format": 1, "intents": {locale: {..}}}.
NAMES_FILE = "intent-studio-names.json"
_INTENT = re.compile(r"((?:.*/)?BotLocales/([^/]+)/)Intents/([^/]+)/Intent\.json")
_LOCALE = re.compile(r"((?:.*/)?BotLocales/([^/]+)/)BotLocale\.json")


def _locales(files: Files) -> list[str]:
    """Each locale's folder (``Bot/BotLocales/en_US/``): the one with the most intents first
    (the one read), then by name."""
    found = {m.group(1) for p in files if (m := _INTENT.fullmatch(p) or _LOCALE.fullmatch(p))}
    return sorted(found, key=lambda loc: (-len(_intent_files(files, loc)), loc))


def detect(files: Files) -> bool:
    return bool(_locales(files))


def _intent_files(files: Files, locale: str) -> list[str]:
    return [p for p in files if (m := _INTENT.fullmatch(p)) and m.group(1) == locale]


def _text(sample: Any) -> str | None:
    return as_text(sample.get("utterance")) if isinstance(sample, dict) else None


def _locale_id(folder: str) -> str:
    return folder.rstrip("/").rsplit("/", 1)[-1]


def _locale(files: Files, language: str | None, problems: list[tuple[int, str]]) -> str:
    """The folder of the locale to read: ``language`` (a locale id, ``de_DE``) or the one with
    the most intents."""
    locales = {_locale_id(loc): loc for loc in _locales(files)}
    first = _locale_id(_locales(files)[0])
    return locales[pick_language(language, first, locales, problems, "locale")]


def _root(files: Files) -> str:
    """The folder of the export's ``manifest.json`` (``""``: the zip's root)."""
    found = sorted((p for p in files if p.rsplit("/", 1)[-1] == "manifest.json"), key=len)
    return found[0][: -len("manifest.json")] if found else ""


def name_map(files: Files) -> dict[str, dict[str, str]]:
    """The export's name map (:data:`NAMES_FILE`): locale -> Lex name -> the project's name;
    empty when there is none or it is not one."""
    raw = files.get(_root(files) + NAMES_FILE)
    try:
        doc = json.loads(raw.decode("utf-8")) if raw is not None else {}
    except (ValueError, UnicodeDecodeError):
        return {}
    intents = doc.get("intents") if isinstance(doc, dict) else None
    if not isinstance(intents, dict):
        return {}
    return {
        str(loc): {str(k): v for k, v in names.items() if isinstance(v, str) and v.strip()}
        for loc, names in intents.items()
        if isinstance(names, dict)
    }


def read(files: Files, language: str | None = None) -> AgentDoc:
    problems: list[tuple[int, str]] = []
    locales = _locales(files)
    locale = _locale(files, language, problems)
    ours = name_map(files).get(_locale_id(locale), {})
    intents = []
    for path in _intent_files(files, locale):
        if (found := load_intent(files, path, "name", problems)) is None:
            continue
        obj, name = found
        described = obj.get("description")
        intent = PlatformIntent(
            name,
            path,
            described if isinstance(described, str) else "",
            fallback=obj.get("parentIntentSignature") == FALLBACK_SIGNATURE,
            ours=ours.get(name, ""),
        )
        samples = obj.get("sampleUtterances") or []
        if not isinstance(samples, list):
            problems.append((0, f"{path}: sampleUtterances must be a list"))
            samples = []
        types = slot_types(files, path)
        for j, sample in enumerate(samples):
            if (text := _text(sample)) is None:
                problems.append((0, f"{path}: sampleUtterances[{j}] needs an 'utterance'"))
            else:
                intent.phrases.append((f"{path}: sampleUtterances[{j}]", text, "train"))
                if spans := reference_spans(text, types):
                    intent.spans[f"{path}: sampleUtterances[{j}]"] = spans
        intents.append(intent)
    lang = _locale_id(locale)
    others = [_locale_id(loc) for loc in locales if loc != locale]
    notes = [f"Kept the locale(s) {', '.join(others)} as they are."] if others else []
    named = [f"{i.name!r} -> {i.ours!r}" for i in intents if i.ours]
    if named:
        more = f" and {len(named) - SHOW_NAMES} more" if len(named) > SHOW_NAMES else ""
        notes.append(
            f"{len(named)} intent(s) have the names they had in Intent Studio ({NAMES_FILE}): "
            f"{', '.join(named[:SHOW_NAMES])}{more}."
        )
    return AgentDoc(intents, lang, notes, problems, locale_values(files, locale))


def skeleton(name: str) -> Files:
    bot = name_rule(name)
    folder = device_safe(bot)  # a bot called "con" is fine; a folder so called is not
    manifest = {"metadata": {"schemaVersion": "1", "fileFormat": "LexJson", "resourceType": "Bot"}}
    bot_json = {
        "name": bot,
        "version": "DRAFT",
        "description": None,
        "dataPrivacy": {"childDirected": False},
        "idleSessionTTLInSeconds": 300,
    }
    locale = {
        "name": "English (US)",
        "identifier": "en_US",
        "version": None,
        "description": None,
        "voiceSettings": None,
        "nluConfidenceThreshold": 0.4,
    }
    fallback = _new_intent("FallbackIntent", None)
    fallback["parentIntentSignature"] = FALLBACK_SIGNATURE
    fallback["sampleUtterances"] = None
    at = f"{folder}/BotLocales/en_US/"
    return {
        "manifest.json": dump_json(manifest),
        f"{folder}/Bot.json": dump_json(bot_json),
        f"{at}BotLocale.json": dump_json(locale),
        f"{at}Intents/FallbackIntent/Intent.json": dump_json(fallback),
    }


def _new_intent(name: str, description: str | None) -> dict[str, Any]:
    return {
        "name": name,
        "description": description or None,
        "parentIntentSignature": None,
        "sampleUtterances": [],
        "dialogCodeHook": None,
        "fulfillmentCodeHook": None,
        "intentConfirmationSetting": None,
        "intentClosingSetting": None,
        "inputContexts": None,
        "outputContexts": None,
        "kendraConfiguration": None,
        "slotPriorities": [],
    }


def _sample(text: str, split: str) -> dict[str, str]:
    return {"utterance": text}


def _slots(files: Files, path: str, obj: Any) -> set[str]:
    """The slots of the intent at ``path``: its ``Slots/<slot>/Slot.json`` and its
    ``slotPriorities``."""
    folder = path[: -len("Intent.json")] + "Slots/"
    found = set()
    for q in files:
        if q.startswith(folder) and q.endswith("/Slot.json"):
            slot = load_json(files[q], q)
            if isinstance(slot, dict) and isinstance(slot.get("name"), str):
                found.add(slot["name"])
    priorities = obj.get("slotPriorities") if isinstance(obj, dict) else None
    found |= {str(p.get("slotName")) for p in priorities or [] if isinstance(p, dict)}
    return found


class _SlotCheck:
    """New sample utterances of an intent. A slot reference (``{name}``) the project annotated
    as one (:mod:`app.formats.agents.lex_slots`) gives the intent the slot it names; one to a
    slot the intent lacks otherwise is written as the slot's name in plain text: Lex refuses to
    build a bot whose utterance names a slot its intent lacks (what the export says, as ES and CX
    say what a relabelled phrase's entity part lost)."""

    def __init__(self, plan: ExportPlan) -> None:
        self.plan = plan
        self.lost: list[str] = []
        self.values: list[str] = []  # annotations that are values: no place in Lex
        self.untyped: list[str] = []  # slots whose type has no values here
        self.needed: dict[str, str] = {}  # the intent being written: slot -> type

    def maker(self, into: str, slots: set[str]) -> Any:
        self.needed = {}

        def make(text: str, split: str) -> dict[str, str]:
            spans = self.plan.spans(text)
            needed = needed_slots(text, spans)
            self.needed.update(needed)
            self.values += value_spans(text, spans)
            gone = [
                m.group(1)
                for m in SLOT_REFERENCE.finditer(text)
                if m.group(1) not in slots and m.group(1) not in needed
            ]
            if not gone:
                return _sample(text, split)
            self.lost.append(f"{text!r} ({', '.join(dict.fromkeys(gone))} in {into!r})")
            plain = SLOT_REFERENCE.sub(lambda m: m.group(1) if m.group(1) in gone else m[0], text)
            return _sample(plain, split)

        return make

    def slots(self, out: Files, path: str, obj: dict[str, Any], locale: str) -> None:
        """Give the intent written the slots its new utterances name."""
        self.untyped += add_slots(out, path, obj, self.needed, self.plan.values, locale)

    def note(self) -> list[str]:
        notes = left_out_note(
            "entity annotation(s) that are values",
            self.values,
            "a Lex sample utterance holds slot references ({Slot}), not annotated values; their "
            "text is written plain",
        )
        if self.untyped:
            notes.append(
                f"{len(self.untyped)} slot(s) name a type with no values in the slot book (Lex "
                f"needs some) or a name Lex refuses: typed {NO_VALUES}: "
                f"{', '.join(self.untyped[:SHOW_NAMES])}."
            )
        if not self.lost:
            return notes
        shown = ", ".join(self.lost[:SHOW_NAMES])
        more = f" and {len(self.lost) - SHOW_NAMES} more" if len(self.lost) > SHOW_NAMES else ""
        return [
            *notes,
            f"{len(self.lost)} phrase(s) name a slot their intent lacks (Lex cannot build such a "
            f"bot): written with the slot's name as plain text: {shown}{more}.",
        ]


def apply(files: Files, plan: ExportPlan) -> Files:
    locale = _locale(files, plan.language, [])
    out = dict(files)
    check = _SlotCheck(plan)
    for path in _intent_files(files, locale):
        obj = load_json(files[path], path)
        name = obj["name"]
        if name in plan.dropped:
            folder = path[: -len("Intent.json")]
            for gone in [q for q in out if q.startswith(folder)]:
                del out[gone]
            continue
        p = plan.intents.get(name)
        if p is None or p.texts is None:
            continue
        make = check.maker(name, _slots(files, path, obj))
        samples = merge_phrases(obj.get("sampleUtterances") or [], _text, p.texts, make)
        if samples or obj.get("sampleUtterances") is not None:
            obj["sampleUtterances"] = samples
        check.slots(out, path, obj, locale)
        set_description(obj, "description", p.description, empty=None)
        out[path] = same_or_dumped(obj, files[path])
    folders = {m.group(3).casefold() for q in files if (m := _INTENT.fullmatch(q))}
    devices: list[tuple[str, str]] = []
    for name in plan.new:
        p = plan.intents[name]
        obj = _new_intent(name, p.description)
        make = check.maker(name, set())
        obj["sampleUtterances"] = [make(t, s) for t, s in p.texts or []]
        path = f"{locale}Intents/{_folder(name, folders, devices)}/Intent.json"
        check.slots(out, path, obj, locale)
        out[path] = dump_json(obj)
    plan.notes += check.note() + device_note(devices, NAME_INSIDE)
    _write_names(files, out, locale, plan)
    return out


def _write_names(files: Files, out: Files, locale: str, plan: ExportPlan) -> None:
    """The name map (:data:`NAMES_FILE`) of the locale written: the names it kept of intents
    still in the bot, and the new intents Lex names otherwise (none left: no map)."""
    at = _root(files) + NAMES_FILE
    maps = name_map(files)
    lang = _locale_id(locale)
    kept = {k: v for k, v in maps.get(lang, {}).items() if k not in plan.dropped}
    mine = {**kept, **plan.renamed}
    if mine:
        maps[lang] = dict(sorted(mine.items()))
    else:
        maps.pop(lang, None)
    if not maps:
        out.pop(at, None)
        return
    out[at] = same_or_dumped({"format": 1, "intents": maps}, files.get(at))
    if plan.renamed:
        plan.notes.append(
            f"{NAMES_FILE} keeps the names Lex refuses ({len(plan.renamed)} new): an import into "
            "Intent Studio reads the intents back under them."
        )


def _folder(name: str, taken: set[str], devices: list[tuple[str, str]]) -> str:
    """The folder of a new intent: its name, but for a Windows device name (``CON_``, said in
    ``devices``; Lex reads the name in ``Intent.json``)."""
    if not is_device_name(name):
        return name
    folder, n = device_safe(name), 2
    while folder.casefold() in taken:
        folder, n = f"{device_safe(name)}{n}", n + 1
    taken.add(folder.casefold())
    devices.append((name, folder))
    return folder


def name_rule(name: str) -> str:
    """A Lex name: ASCII letters and digits, one ``_`` or ``-`` between them, at most 100.

    Example:
        >>> name_rule("card lost / stolen")
        'card_lost_stolen'
    """
    rough = name_with(lambda c: c.isascii() and (c.isalnum() or c in "_-"), limit=100)(name)
    return re.sub(r"[_-]{2,}", "_", rough).strip("_-") or "intent"


FORMAT = AgentFormat(
    name="lex-v2",
    title="Amazon Lex V2 bot",
    container="zip",
    detect=detect,
    read=read,
    skeleton=skeleton,
    apply=apply,
    name_rule=name_rule,
    fallback_takes_phrases=False,
)
