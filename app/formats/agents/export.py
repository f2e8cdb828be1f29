"""The export side of the agent formats: what an export changes in a kept agent (an
:class:`ExportPlan`), and the helpers a format applies it with, so that what the project did not
change stays as it was (phrases with their ids and entity parts, their order, whole files).

Example:
    >>> from app.formats.agents.base import AgentDoc, PlatformIntent
    >>> doc = AgentDoc([PlatformIntent("greet", "x", phrases=[("x", "hi", "train")])])
    >>> plan = plan_export(doc, [Row("hi", ("greet",)), Row("yo", ("greet",))], {"greet": ""},
    ...                    name_rule=str)
    >>> plan.intents["greet"].texts
    [('hi', 'train'), ('yo', 'train')]
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from app.formats.agents.base import (
    SHOW_NAMES,
    AgentDoc,
    intent_names,
    text_key,
)
from app.formats.common import Row
from core.retrieval.scope import OUT_OF_SCOPE
from core.slots import EntitySpan
from storage.names import name_key

# What a relabelled Dialogflow phrase may lose (Relabelled.note).
LOST_PART = "an entity part whose parameter their new intent lacks"


@dataclass
class IntentPlan:
    """What an export writes into one platform intent: ``texts`` (``(text, split)``, in the
    project's order) and its ``description``. ``texts`` None: leave the intent as it is."""

    texts: list[tuple[str, str]] | None
    description: str | None = None


@dataclass
class ExportPlan:
    """The changes an export applies to an agent, by platform intent name: ``intents`` (kept
    ones in the agent's order, then ``new`` ones), ``dropped`` (deleted in the project)."""

    intents: dict[str, IntentPlan]
    new: list[str]
    dropped: set[str]
    language: str
    notes: list[str] = field(default_factory=list)
    # platform name -> our name, of the new intents the platform's name rule renamed
    renamed: dict[str, str] = field(default_factory=dict)
    # the project's entity annotations (text -> spans) and its slot book (entity -> value ->
    # synonyms): what a phrase the export writes carries, and the entity types it names
    entities: dict[str, list[EntitySpan]] = field(default_factory=dict)
    values: dict[str, dict[str, list[str]]] = field(default_factory=dict)

    def spans(self, text: str) -> list[EntitySpan]:
        """The annotations of a phrase the export writes (none: plain text)."""
        return self.entities.get(text, [])

    def entity_types(self) -> dict[str, dict[str, list[str]]]:
        """Every entity type the export's phrases name, with its values and their synonyms
        (a type with none: empty)."""
        named = {s.entity for spans in self.entities.values() for s in spans}
        return {e: self.values.get(e, {}) for e in sorted(named | set(self.values))}

    def texts_of(self, name: str) -> list[tuple[str, str]] | None:
        plan = self.intents.get(name)
        return None if plan is None else plan.texts


def plan_export(
    doc: AgentDoc,
    rows: Iterable[Row],
    intents: Mapping[str, str],
    *,
    name_rule: Callable[[str], str],
    fallback_takes_phrases: bool = True,
    test_split: bool = False,
) -> ExportPlan:
    """What an export changes in an agent read as ``doc`` so that it holds the project.

    Args:
        doc: the kept agent (or the empty agent a format starts from), read again.
        rows: every row of the project; unlabelled ones are left out.
        intents: every intent of the project -> its description (``""``: none).
        name_rule: the platform's name for a new intent of ours.
        fallback_takes_phrases: whether the platform's fallback holds phrases (Lex: no).
        test_split: whether the platform marks test utterances (CLU: yes).
    """
    names = intent_names(doc, [], [])
    wanted = {n for n in intents if n != OUT_OF_SCOPE}
    by_intent: dict[str, list[tuple[str, str]]] = {}
    oos: list[tuple[str, str]] = []
    unlabelled = tests = 0
    for row in rows:
        if not row.labels:
            unlabelled += 1
            continue
        tests += row.split == "test"
        for label in row.labels:
            if label == OUT_OF_SCOPE:
                oos.append((row.text, row.split))
            else:
                wanted.add(label)
                by_intent.setdefault(label, []).append((row.text, row.split))
    plans: dict[str, IntentPlan] = {}
    dropped: set[str] = set()
    taken: set[str] = set()
    planned: dict[str, str] = {}  # our intent -> the platform intent it is written into
    merged: dict[str, str] = {}  # platform intent -> the one it was read as (one name here)
    fallbacks = [i for i in doc.intents if i.fallback]
    home = {text_key(t): i.name for i in fallbacks for _, t, _ in i.phrases}
    for intent, ours in zip(doc.intents, names, strict=True):
        taken.add(intent.name.casefold())
        ours = _ours(ours, wanted)
        if intent.fallback:
            if fallback_takes_phrases:
                plans[intent.name] = IntentPlan([])
        elif ours in wanted:
            plans[intent.name] = IntentPlan(by_intent.get(ours, []), intents.get(ours, ""))
            wanted.discard(ours)
            planned[ours] = intent.name
        elif ours in planned:
            merged[intent.name] = planned[ours]
        elif not intent.phrases and not intent.description:
            plans[intent.name] = IntentPlan(None)  # never imported: left as it is
        else:
            dropped.add(intent.name)
    notes = []
    if plans_oos := [p for i, p in plans.items() if any(f.name == i for f in fallbacks)]:
        default = plans_oos[0]
        for text, split in oos:
            target = plans.get(home.get(text, ""), default)
            assert target.texts is not None
            target.texts.append((text, split))
    elif oos:
        notes.append(
            f"Left out {len(oos)} {OUT_OF_SCOPE!r} phrase(s): the agent's fallback takes none."
        )
    notes += _renamed(doc, dropped, wanted, by_intent, intents, plans)
    if merged:
        shown = [f"{a!r} (into {b!r})" for a, b in list(merged.items())[:SHOW_NAMES]]
        more = f" and {len(merged) - SHOW_NAMES} more" if len(merged) > SHOW_NAMES else ""
        notes.append(
            f"Left out {len(merged)} intent(s) the import read as another intent written another "
            f"way, whose phrases that intent now holds: {', '.join(shown)}{more}."
        )
    new = []
    renamed = []
    platform_names: dict[str, str] = {}
    for ours in sorted(wanted):
        base = name_rule(ours)
        name, n = base, 2
        while name.casefold() in taken:
            name, n = f"{base}_{n}", n + 1
        taken.add(name.casefold())
        if name != ours:
            renamed.append(f"{ours!r} -> {name!r}")
            platform_names[name] = ours
        plans[name] = IntentPlan(by_intent.get(ours, []), intents.get(ours, ""))
        new.append(name)
    if renamed:
        more = f" and {len(renamed) - SHOW_NAMES} more" if len(renamed) > SHOW_NAMES else ""
        notes.append(
            f"{len(renamed)} intent name(s) are not valid on the platform and were written as: "
            f"{', '.join(renamed[:SHOW_NAMES])}{more}."
        )
    if dropped:
        notes.append(
            f"Left out {len(dropped)} intent(s) deleted in the project: "
            f"{', '.join(sorted(dropped)[:SHOW_NAMES])}."
        )
    if unlabelled:
        notes.append(f"Left out {unlabelled} unlabelled utterance(s).")
    if tests and not test_split:
        notes.append(f"{tests} test-split utterance(s) are written as training phrases.")
    return ExportPlan(plans, new, dropped | set(merged), doc.language, notes, platform_names)


def _ours(name: str, wanted: set[str]) -> str:
    """The project's intent a platform intent read as ``name`` is: ``name``, else the one intent
    still wanted with its key (an import mapped ``Greet`` onto the project's ``greet``)."""
    if name in wanted:
        return name
    key = name_key(name)
    same = [n for n in wanted if name_key(n) == key]
    return same[0] if len(same) == 1 else name


def _renamed(
    doc: AgentDoc,
    dropped: set[str],
    wanted: set[str],
    by_intent: Mapping[str, list[tuple[str, str]]],
    intents: Mapping[str, str],
    plans: dict[str, IntentPlan],
) -> list[str]:
    """Intents renamed in the project: a new intent of ours that holds at least half the phrases
    of a platform intent no longer in the project is that intent, written under its platform
    name with everything it had (responses, slots, references to it elsewhere in the agent stay
    valid). Changes ``dropped``, ``wanted`` and ``plans``; returns a note per rename."""
    kept_texts = {i.name: {text_key(t) for _, t, _ in i.phrases} for i in doc.intents}
    notes = []
    for ours in sorted(wanted):
        texts = {t for t, _ in by_intent.get(ours, [])}
        shared = {p: len(texts & kept_texts[p]) for p in sorted(dropped)}
        best = max(shared, key=lambda p: shared[p], default=None)
        if best is None or not shared[best] or 2 * shared[best] < len(kept_texts[best]):
            continue
        plans[best] = IntentPlan(by_intent.get(ours, []), intents.get(ours, ""))
        dropped.discard(best)
        wanted.discard(ours)
        notes.append(
            f"Intent {ours!r} holds {shared[best]} of the {len(kept_texts[best])} phrase(s) of the "
            f"agent's {best!r}: written as {best!r}, with its responses and references (rename it "
            "on the platform if the new name should go there too)."
        )
    return notes


def merge_phrases(
    originals: list[Any],
    text_of: Callable[[Any], str | None],
    texts: list[tuple[str, str]],
    make: Callable[[str, str], Any],
    carried: Callable[[str], list[Any]] | None = None,
) -> list[Any]:
    """An intent's phrases after an export: the kept ones still in ``texts`` in their order and
    as they were (entity parts, ids; a phrase there twice stays twice), then the new ones: those
    ``carried(text)`` brings from the intent they were relabelled from (their ids and parts),
    else made by ``make(text, split)``."""
    want = {t for t, _ in texts}
    out, done = [], set()
    for raw in originals:
        text = text_of(raw)
        key = text_key(text) if text is not None else None
        if key in want:
            out.append(raw)
            done.add(key)
    for text, split in texts:
        if text not in done:
            out.extend((carried(text) if carried is not None else []) or [make(text, split)])
            done.add(text)
    return out


class Relabelled:
    """The phrases of a kept agent that the project relabelled: each text no longer under an
    intent that held it, by that first intent, so that the intent it is under now can take the
    phrase over with what does not depend on the intent (its id, its entity parts). A phrase
    still under its first intent (a second intent added) is not taken: two would share an id.
    ``originals``: every intent's phrases in the language read, by platform name."""

    def __init__(
        self,
        plan: ExportPlan,
        originals: Mapping[str, list[Any]],
        text_of: Callable[[Any], str | None],
    ) -> None:
        self.text_of = text_of
        self.originals = originals
        still = {n: {t for t, _ in p.texts} for n, p in plan.intents.items() if p.texts is not None}
        self._from: dict[str, str] = {}
        for name, raws in originals.items():
            if name not in still and name not in plan.dropped:
                continue  # left as it is: nothing moves out of it
            for raw in raws:
                text = text_of(raw)
                if text is not None and text_key(text) not in still.get(name, set()):
                    self._from.setdefault(text_key(text), name)
        self.lost: list[str] = []  # what could not be kept, one line each (for the notes)

    def phrases(self, text: str, into: str) -> list[Any]:
        """The phrases of ``text`` that ``into`` takes over (none: make a new one)."""
        source = self._from.pop(text, None)
        if source is None or source == into:
            return []
        return [r for r in self.originals[source] if text_key(self.text_of(r) or "") == text]

    def note(self, what: str) -> list[str]:
        """The notes on what relabelled phrases could not keep (``what``: e.g. "an entity part
        whose parameter their new intent lacks")."""
        if not self.lost:
            return []
        shown = ", ".join(self.lost[:SHOW_NAMES])
        more = f" and {len(self.lost) - SHOW_NAMES} more" if len(self.lost) > SHOW_NAMES else ""
        return [f"{len(self.lost)} relabelled phrase(s) lost {what}: {shown}{more}."]


def merge_utterances(
    originals: list[Any],
    plan: ExportPlan,
    *,
    intent_of: Callable[[Any], str | None],
    text_of: Callable[[Any], str | None],
    make: Callable[[str, str, str], Any],
    update: Callable[[Any, str], Any] = lambda raw, split: raw,
    mine: Callable[[Any], bool] = lambda raw: True,
    relabel: Callable[[Any, str], Any] | None = None,
) -> list[Any]:
    """One list of utterances for every intent (LUIS, CLU) after an export: the kept ones in
    their order (``update(raw, split)`` may set the split; one there twice stays twice, the
    second as it was), one the
    project relabelled where it was, under its new intent (``relabel(raw, intent)``: its entity
    labels name the app's entities, not the intent's), without those of dropped intents or no
    longer in the project, then the new ones (``make(text, intent, split)``), intent by intent.
    An utterance ``mine`` says is not in the language read is kept as it is."""
    left: dict[str, dict[str, str]] = {
        name: dict(p.texts) for name, p in plan.intents.items() if p.texts is not None
    }
    had = {
        (intent_of(raw), text_key(text_of(raw) or ""))
        for raw in originals
        if intent_of(raw) in left and mine(raw)
    }
    taken: dict[str, dict[str, str]] = {name: {} for name in left}
    out = []
    for raw in originals:
        intent = intent_of(raw)
        text = text_of(raw)
        if intent is None or text is None:
            continue
        if not mine(raw) or (intent not in left and intent not in plan.dropped):
            if intent not in plan.dropped:  # another language, or an intent left as it is
                out.append(raw)
            continue
        key = text_key(text)
        if intent in left and key in left[intent]:
            taken[intent][key] = left[intent].pop(key)
            out.append(update(raw, taken[intent][key]))
        elif key in taken.get(intent, {}):
            out.append(raw)  # the same utterance again: as it was (the import read the first)
        elif relabel is not None:
            into = next((n for n, t in left.items() if key in t and (n, key) not in had), None)
            if into is not None:
                taken[into][key] = left[into].pop(key)
                out.append(update(relabel(raw, into), taken[into][key]))
    for name, texts in left.items():
        out += [make(text, name, split) for text, split in texts.items()]
    return out


def set_description(
    item: dict[str, Any], key: str, description: str | None, *, empty: object = ""
) -> None:
    """Write an intent's description into ``item[key]`` (None: leave it; ``""``: clear one
    that was there, to ``empty``)."""
    if description is None:
        return
    was = item.get(key)
    if isinstance(was, str) and " ".join(was.split()) == description:
        return  # what the import read (its spaces normalised): left as it was
    if description:
        item[key] = description
    elif item.get(key):
        item[key] = empty


@dataclass(frozen=True)
class AgentFormat:
    """One platform's agent format. ``container``: ``"zip"`` (``source`` is ``{path: bytes}``)
    or ``"json"`` (``source`` is the parsed JSON value). ``read`` finds the intents,
    ``skeleton(name)`` is the empty agent an export of a project from elsewhere starts from, and
    ``apply`` returns a new source with an :class:`ExportPlan` applied (``source`` unchanged)."""

    name: str
    title: str
    container: str
    detect: Callable[[Any], bool]
    read: Callable[..., AgentDoc]  # (source, language: str | None = None)
    skeleton: Callable[[str], Any]
    apply: Callable[[Any, ExportPlan], Any]
    name_rule: Callable[[str], str]
    fallback_takes_phrases: bool = True
    test_split: bool = False
