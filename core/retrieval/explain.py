"""Why a prediction came out as it did, told by the labelled neighbours that decided it.

This is the decision rule itself, not a post-hoc approximation: the predicted intent is the one
with the highest score, and the sentence names both parts of that score (the default rule,
:data:`~core.retrieval.knn.NEAREST_PROTOTYPE`): the intent's nearest labelled example and its
*prototype* (the centre of its examples), with the intent's nearest examples as evidence; the
runner-up's parts show the other side of the decision. The margin is the difference of the two
scores. Under the ``"nearest"`` rule the nearest example alone decides, and the sentence says so.
With anchors on (:mod:`core.retrieval.anchors`) the centre includes the intent's description (or
name), and an intent with no labelled examples yet is predicted by its anchor alone: the
sentence says so ("no labelled examples yet: its description '…' (0.61)").

The sentence marks intent names as ``*name*``; every ``*`` and ``\\`` of a name or a quoted text in
it is backslash-escaped (:func:`literal`), so :func:`sentence_parts` tells the marks from the
text (an utterance ``{{7*7}}`` stays ``{{7*7}}``, issue 56 row 12).

Two warnings are attached:

- ``ambiguous``: the margin to the runner-up is below a threshold (default 0.05).
- ``borderline``: the diagnostic of the non-siamese bi-encoder paper — the utterance shares no
  word with its own intent's name (the gold intent if given, else the predicted one) but shares a
  word with a competing intent's name. Names are split on ``_``, ``-`` and spaces, lower-cased,
  stop words dropped and a plural ``s`` folded (``cards`` matches ``card``).

Example:
    >>> from core.retrieval.knn import IntentScore, Neighbour, Prediction
    >>> a = Neighbour(1, "Where is my new card?", ("card_arrival",), 0.83)
    >>> b = Neighbour(2, "How long does delivery take?", ("delivery_estimate",), 0.71)
    >>> p = Prediction([IntentScore("card_arrival", 0.83, a), IntentScore("delivery_estimate", 0.71, b)], [a, b])
    >>> explain("my card has not come", p).sentence.split(" because")[0]
    'Predicted *card_arrival*'
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from core.retrieval.knn import AMBIGUOUS_MARGIN, IntentScore, Neighbour, Prediction

logger = logging.getLogger(__name__)

__all__ = ["AMBIGUOUS_MARGIN", "Explanation", "borderline", "explain", "tokens"]
_QUOTE_CHARS = 80

# Function words only: domain words such as "top", "up", "bill" or "card" must stay meaningful.
_STOP_TEXT = """
    a an the and or but if of at by for with about to from in on into onto under
    is are was were be been being am do does did doing have has had having i me my mine
    we us our you your he him his she her it its they them their this that these those what which
    who whom whose when where why how can could will would shall should may might must nor
    so than too very just also any all some each other such own same there here then again once
    only more most few both s t don isn wasn aren get got please
"""
STOP_WORDS = frozenset(_STOP_TEXT.split())

_SPLIT = re.compile(r"[^0-9a-z]+")


def _fold(token: str) -> str:
    if len(token) > 3 and token.endswith("s") and not token.endswith("ss"):
        return token[:-1]
    return token


def tokens(text: str) -> set[str]:
    """Content words of a text or an intent name: split on non-alphanumerics (so ``_``, ``-``
    and spaces), lower-cased, stop words dropped, plural ``s`` folded.

    Example:
        >>> sorted(tokens("card_arrival")), sorted(tokens("Where are my cards?"))
        (['arrival', 'card'], ['card'])
    """
    return {_fold(t) for t in _SPLIT.split(text.lower()) if t and t not in STOP_WORDS}


def borderline(
    text: str, own_intents: Iterable[str], competing_intents: Iterable[str]
) -> tuple[bool, str]:
    """The paper's borderline test: no word of its own intent's name, a word of a competitor's.

    Args:
        text: the utterance.
        own_intents: its own intent(s) (gold if known, else predicted).
        competing_intents: the other intents (own ones are ignored if present).

    Returns:
        ``(is_borderline, reason)``; the reason is a plain sentence, empty when not borderline.

    Example:
        >>> borderline("I want to order a pizza", ["food_delivery"], ["order_status"])[0]
        True
    """
    own = [name for name in own_intents if name]
    if not own:
        return False, ""
    words = tokens(text)
    if any(words & tokens(name) for name in own):
        return False, ""
    own_set = set(own)
    hits: dict[str, list[str]] = {}
    for name in sorted(set(competing_intents) - own_set):
        shared = sorted(words & tokens(name))
        if shared:
            hits[name] = shared
    if not hits:
        return False, ""
    parts = [
        f"{emphasised(name)} ({literal(', '.join(ws))})" for name, ws in list(hits.items())[:3]
    ]
    more = f" and {len(hits) - 3} more" if len(hits) > 3 else ""
    own_txt = " / ".join(emphasised(name) for name in own)
    reason = (
        f"Borderline: it shares no word with its own intent {own_txt} but shares words "
        f"with {', '.join(parts)}{more}."
    )
    return True, reason


@dataclass(frozen=True)
class Explanation:
    """Everything a person needs to see why an utterance got its intent."""

    text: str
    predicted: str | None
    score: float
    margin: float
    neighbours: list[Neighbour] = field(default_factory=list)
    predicted_neighbour: Neighbour | None = None
    runner_up: str | None = None
    runner_up_score: float | None = None
    runner_up_neighbour: Neighbour | None = None
    sentence: str = ""
    ambiguous: bool = False
    borderline: bool = False
    borderline_reason: str = ""
    gold: tuple[str, ...] = ()
    correct: bool | None = None
    predicted_description: str | None = None
    runner_up_description: str | None = None
    out_of_scope: bool = False
    threshold: float | None = None
    # what decided: the predicted intent's nearest-example and prototype parts of its score, its
    # nearest examples and how many examples its prototype is made of (prototype None: the
    # nearest example alone decided)
    predicted_nearest: float | None = None
    predicted_prototype: float | None = None
    predicted_size: int = 0
    predicted_examples: list[Neighbour] = field(default_factory=list)
    runner_up_prototype: float | None = None
    # the predicted intent has no labelled examples: its anchor (description or name) decided
    predicted_by_anchor: bool = False

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (tuples become lists).

        Example:
            >>> Explanation("hi", None, 0.0, 0.0).to_dict()["predicted"] is None
            True
        """
        d = {f.name: getattr(self, f.name) for f in fields(self)}
        d["gold"] = list(self.gold)
        d["neighbours"] = [n.to_dict() for n in self.neighbours]
        d["predicted_examples"] = [n.to_dict() for n in self.predicted_examples]
        for key in ("predicted_neighbour", "runner_up_neighbour"):
            d[key] = d[key].to_dict() if d[key] is not None else None
        return d


def literal(text: str) -> str:
    r"""``text`` as it goes into an explanation's sentence: ``\`` and ``*`` backslash-escaped.

    Example:
        >>> literal("{{7*7}}")
        '{{7\\*7}}'
    """
    return text.replace("\\", "\\\\").replace("*", "\\*")


def emphasised(name: str) -> str:
    """An intent's name as a sentence marks it: ``*name*`` (its own ``*`` escaped)."""
    return f"*{literal(name)}*"


def sentence_parts(sentence: str) -> list[tuple[str, bool]]:
    r"""A sentence (of :func:`explain`, or any written with :func:`emphasised` and
    :func:`literal`) as (text, emphasised) runs, the marks and escapes taken off: what every
    surface renders (the Try and Map tabs' cards, the report).

    Example:
        >>> sentence_parts(f"Predicted {emphasised('greet')} like '{literal('{{7*7}}')}'.")
        [('Predicted ', False), ('greet', True), (" like '{{7*7}}'.", False)]
    """
    runs: list[tuple[str, bool]] = []
    text, on, i = "", False, 0
    while i < len(sentence):
        c = sentence[i]
        if c == "\\" and i + 1 < len(sentence):
            text, i = text + sentence[i + 1], i + 2
            continue
        if c == "*":
            if text:
                runs.append((text, on))
            text, on = "", not on
        else:
            text += c
        i += 1
    if text:
        runs.append((text, on))
    return runs


def _quote(text: str) -> str:
    text = " ".join(text.split())
    cut = text if len(text) <= _QUOTE_CHARS else text[: _QUOTE_CHARS - 1].rstrip() + "…"
    return literal(cut)


def _anchor_kind(score: IntentScore, described: Mapping[str, str]) -> str:
    return "description" if described.get(score.intent) else "name"


def _parts(score: IntentScore, described: Mapping[str, str]) -> str:
    """The two parts of an intent's score, in words: its nearest example and its centre."""
    examples = "example" if score.size == 1 else "examples"
    anchor = f" and its {_anchor_kind(score, described)}" if score.anchor is not None else ""
    return (
        f"'{_quote(score.best.text)}' ({score.best.similarity:.2f}) and the centre of its "
        f"{score.size} {examples}{anchor} ({score.prototype or 0.0:.2f})"
    )


def _cold(score: IntentScore, described: Mapping[str, str]) -> str:
    """An intent scored by its anchor alone, in words."""
    return (
        f"no labelled examples yet: its {_anchor_kind(score, described)} "
        f"'{_quote(score.best.text)}' ({score.best.similarity:.2f})"
    )


def _sentence(
    pred: Prediction,
    margin: float,
    ambiguous: bool,
    threshold: float | None = None,
    described: Mapping[str, str] | None = None,
    lead: str = "Predicted",
) -> str:
    if not pred.intents:
        return "No prediction: there are no labelled examples to compare with yet."
    described = described or {}
    top = pred.intents[0]
    if threshold is not None:
        evidence = (
            f"'{_quote(top.best.text)}'" if top.by_example else f"from {_parts(top, described)}"
        )
        return (
            f"No intent (out of scope): the closest intent {emphasised(top.intent)} scores "
            f"{top.score:.2f} ({evidence}), below its threshold {threshold:.2f}."
        )
    if top.cold:  # its anchor alone decided
        s = f"{lead} {emphasised(top.intent)}: {_cold(top, described)}."
    elif top.by_example:  # the nearest example alone decided
        s = (
            f"{lead} {emphasised(top.intent)} because it is most like "
            f"'{_quote(top.best.text)}' ({top.best.similarity:.2f})."
        )
    else:
        s = (
            f"{lead} {emphasised(top.intent)} because its examples are the closest: its nearest example "
            f"{_parts(top, described)} give it {top.score:.2f}."
        )
    ru = pred.runner_up
    if ru is None:
        return s + " No other intent has examples close enough to compete."
    if ru.cold:
        s += f" The closest other intent is {emphasised(ru.intent)} ({_cold(ru, described)})."
    elif ru.by_example:
        s += (
            f" The closest other intent is {emphasised(ru.intent)} "
            f"('{_quote(ru.best.text)}', {ru.best.similarity:.2f})."
        )
    else:
        s += (
            f" The closest other intent is {emphasised(ru.intent)} with {ru.score:.2f}, "
            f"from {_parts(ru, described)}."
        )
    if ambiguous:
        s += f" It is a close call (margin {margin:.2f})."
    return s


def explain(
    text: str,
    prediction: Prediction,
    *,
    intent_descriptions: Mapping[str, str] | None = None,
    gold: Sequence[str] | str | None = None,
    intents: Iterable[str] | None = None,
    k: int | None = None,
    ambiguous_margin: float = AMBIGUOUS_MARGIN,
    out_of_scope_below: float | None = None,
    head_decided: bool = False,
) -> Explanation:
    """Explain a k-NN prediction by its deciding neighbours.

    Args:
        text: the utterance that was classified.
        prediction: the :class:`~core.retrieval.knn.Prediction` for it.
        intent_descriptions: optional intent → description, copied into the explanation.
        gold: the utterance's own intent(s), when labelled; used for ``borderline`` and
            ``correct`` (otherwise the predicted intent is its own intent).
        intents: every intent of the project, for the borderline test (the ranked intents of the
            prediction and the keys of ``intent_descriptions`` are always included).
        k: how many of the prediction's nearest neighbours to keep as evidence (all if ``None``).
        ambiguous_margin: a margin below this marks the prediction ``ambiguous``.
        out_of_scope_below: the threshold the top intent missed, when the prediction decided
            *out of scope* (the predictor decides; this tells it).
        head_decided: a multi-label head decided the label set, so the sentence names the
            top intent as the *nearest*, not as the prediction.

    Returns:
        An :class:`Explanation`.

    Example:
        >>> explain("hello", Prediction([])).sentence
        'No prediction: there are no labelled examples to compare with yet.'
    """
    descriptions = dict(intent_descriptions or {})
    gold_t: tuple[str, ...] = (gold,) if isinstance(gold, str) else tuple(gold or ())
    gold_t = tuple(g for g in gold_t if g)
    top = prediction.intents[0] if prediction.intents else None
    ru = prediction.runner_up
    margin = float(prediction.margin)
    ambiguous = prediction.ambiguous(ambiguous_margin)

    known = {s.intent for s in prediction.intents} | set(descriptions) | set(intents or ())
    own = gold_t or ((top.intent,) if top is not None else ())
    is_borderline, reason = borderline(text, own, known)

    shown = prediction.neighbours if k is None else prediction.neighbours[: max(0, k)]
    return Explanation(
        text=text,
        predicted=top.intent if top else None,
        score=float(prediction.score),
        margin=margin,
        neighbours=list(shown),
        predicted_neighbour=top.best if top else None,
        runner_up=ru.intent if ru else None,
        runner_up_score=float(ru.score) if ru else None,
        runner_up_neighbour=ru.best if ru else None,
        sentence=_sentence(
            prediction,
            margin,
            ambiguous,
            out_of_scope_below,
            descriptions,
            lead="Nearest intent" if head_decided else "Predicted",
        ),
        ambiguous=bool(ambiguous),
        borderline=is_borderline,
        borderline_reason=reason,
        gold=gold_t,
        correct=(top.intent in gold_t) if (gold_t and top) else None,
        predicted_description=descriptions.get(top.intent) if top else None,
        runner_up_description=descriptions.get(ru.intent) if ru else None,
        out_of_scope=out_of_scope_below is not None and top is not None,
        threshold=out_of_scope_below,
        predicted_nearest=top.nearest if top else None,
        predicted_prototype=top.prototype if top else None,
        predicted_size=top.size if top else 0,
        predicted_examples=list(top.examples) if top else [],
        runner_up_prototype=ru.prototype if ru else None,
        predicted_by_anchor=bool(top and top.cold),
    )
