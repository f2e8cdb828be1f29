"""What the k-NN rule returns: the ranked intents, the examples behind them, and the rule's
constants (:mod:`core.retrieval.knn` uses them; they are re-exported there; the arithmetic, with
:func:`combine`, is :mod:`core.portable`'s)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from core.portable import AMBIGUOUS_MARGIN, EXACT, NEAREST, NEAREST_PROTOTYPE, Score, combine
from core.retrieval.anchors import ANCHOR_ID

__all__ = ["AMBIGUOUS_MARGIN", "EXACT", "NEAREST", "NEAREST_PROTOTYPE", "Score", "combine"]

RULES = (NEAREST, NEAREST_PROTOTYPE)
DEFAULT_RULE = NEAREST_PROTOTYPE
# Examples of each ranked intent kept as its evidence.
EVIDENCE = 3


def check_rule(rule: str) -> str:
    """``rule`` if it is one of :data:`RULES`, else a ValueError that names them."""
    if rule not in RULES:
        raise ValueError(f"Unknown decision rule {rule!r}: use one of {', '.join(RULES)}.")
    return rule


@dataclass(frozen=True)
class Neighbour:
    """A labelled example found near a query: the evidence behind a score and an explanation."""

    id: int
    text: str
    labels: tuple[str, ...]
    similarity: float

    def to_dict(self) -> dict[str, Any]:
        """The public JSON shape of an example (``labels`` as a list).

        Example:
            >>> Neighbour(3, "hi", ("greet",), 0.5).to_dict()
            {'id': 3, 'text': 'hi', 'labels': ['greet'], 'similarity': 0.5}
        """
        return {
            "id": int(self.id),
            "text": self.text,
            "labels": list(self.labels),
            "similarity": float(self.similarity),
        }


@dataclass(frozen=True)
class IntentScore:
    """One ranked intent: its score and the evidence that made it.

    ``score`` is :func:`combine` of ``nearest`` (its nearest example's similarity, or the mean of
    its ``k`` nearest) and ``prototype`` (the cosine to its prototype; None under the
    ``"nearest"`` rule). ``examples``: its nearest examples to the query, nearest first.
    """

    intent: str
    score: float
    # The intent's nearest example to the query (the evidence for this intent).
    best: Neighbour
    nearest: float | None = None
    prototype: float | None = None
    size: int = 0  # examples behind the prototype
    examples: tuple[Neighbour, ...] = ()
    # cosine to the intent's anchor (its description or name) when anchors take part
    anchor: float | None = None

    @property
    def cold(self) -> bool:
        """Whether its anchor alone made the score (no labelled examples yet)."""
        return self.best.id == ANCHOR_ID

    @property
    def by_example(self) -> bool:
        """Whether its nearest example alone made the score (no prototype, or an exact match)."""
        return not self.cold and (self.prototype is None or self.best.similarity >= EXACT)


@dataclass(frozen=True)
class Prediction:
    intents: list[IntentScore]
    neighbours: list[Neighbour] = field(default_factory=list)

    @property
    def top(self) -> str | None:
        return self.intents[0].intent if self.intents else None

    @property
    def score(self) -> float:
        return self.intents[0].score if self.intents else 0.0

    @property
    def runner_up(self) -> IntentScore | None:
        return self.intents[1] if len(self.intents) > 1 else None

    @property
    def margin(self) -> float:
        """Score of the top intent minus the runner-up's (1.0 when there is no runner-up)."""
        if not self.intents:
            return 0.0
        ru = self.runner_up
        return 1.0 if ru is None else self.intents[0].score - ru.score

    def ambiguous(self, margin: float = AMBIGUOUS_MARGIN) -> bool:
        """Whether the top two intents are within ``margin`` of each other (a close call)."""
        return self.runner_up is not None and self.margin < margin
