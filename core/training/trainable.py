"""What training can learn from. An intent needs :data:`MIN_EXAMPLES` train examples to form a
positive pair; one with fewer never blocks a retrain: it is left out of *training* (its name
taken off its rows, and a row left with no intent left out), and stays in the pool and the
evaluation, predicted through its examples and its anchor like any intent. Training itself
needs two intents with enough examples (in-batch negatives come from another intent). The
reserved out-of-scope label is not an intent: it needs no count.

Example:
    >>> t = trainable(["hi", "hello", "bye", "ciao, refund me", "a tip"],
    ...               [("greet",), ("greet",), ("bye",), ("bye", "refund"), ("tip",)])
    >>> t.texts, t.left_out
    (['hi', 'hello', 'bye', 'ciao, refund me'], ('refund', 'tip'))
    >>> t.labels[-1], t.note()[:57]
    (('bye',), 'Left out of training: 2 intent(s) with fewer than 2 train')
    >>> trainable(["hi", "hey", "no idea"], [("greet",), ("greet",), ()]).texts  # no intent: kept
    ['hi', 'hey', 'no idea']
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from core.retrieval.scope import in_scope_labels

MIN_EXAMPLES = 2
SHOW_NAMES = 8


@dataclass(frozen=True)
class Trainable:
    """The rows training uses (``texts``, ``labels``) and the intents ``left_out`` of it."""

    texts: list[str]
    labels: list[tuple[str, ...]]
    left_out: tuple[str, ...]

    def note(self) -> str:
        """A line for the job's log ("" when nothing was left out)."""
        if not self.left_out:
            return ""
        n = len(self.left_out)
        names = ", ".join(self.left_out[:SHOW_NAMES])
        more = f" and {n - SHOW_NAMES} more" if n > SHOW_NAMES else ""
        return (
            f"Left out of training: {n} intent(s) with fewer than "
            f"{MIN_EXAMPLES} train examples ({names}{more}); they are still predicted through "
            "the pool and their anchor"
        )


def _too_few(labels: Sequence[Sequence[str]]) -> tuple[Counter[str], tuple[str, ...]]:
    counts = Counter(name for lab in labels for name in set(in_scope_labels(lab)))
    return counts, tuple(sorted(n for n, c in counts.items() if c < MIN_EXAMPLES))


def trainable(texts: Sequence[str], labels: Sequence[Sequence[str]]) -> Trainable:
    """``texts`` and ``labels`` without the intents that have fewer than :data:`MIN_EXAMPLES`
    examples: their names are taken off every row, and a row they leave with no label at all is
    left out (a row that had none to begin with stays: it has no same-intent partner, so it never
    trains)."""
    if len(texts) != len(labels):
        raise ValueError(f"texts and labels differ in length ({len(texts)} vs {len(labels)}).")
    _, left_out = _too_few(labels)
    if not left_out:
        return Trainable(list(texts), [tuple(lab) for lab in labels], ())
    drop = set(left_out)
    out_texts, out_labels = [], []
    for text, lab in zip(texts, labels, strict=True):
        kept = tuple(n for n in lab if n not in drop)
        if kept or not lab:
            out_texts.append(text)
            out_labels.append(kept)
    return Trainable(out_texts, out_labels, left_out)


def check_trainable(labels: Sequence[Sequence[str]]) -> tuple[str, ...]:
    """The intents a retrain will leave out (see :func:`trainable`), or ``ValueError`` with a
    clear message when what is left cannot train: no labelled example, or fewer than two intents
    with :data:`MIN_EXAMPLES` examples."""
    counts, left_out = _too_few(labels)
    if not counts:
        raise ValueError("No labelled utterances: label some examples before training.")
    enough = sorted(n for n, c in counts.items() if c >= MIN_EXAMPLES)
    if len(enough) < 2:
        have = f" (only {', '.join(enough)} has)" if enough else ""
        few = ", ".join(left_out[:5]) + (" …" if len(left_out) > 5 else "")
        too_few = f"; too few: {few}" if left_out else ""
        raise ValueError(
            f"Training needs at least 2 intents with {MIN_EXAMPLES} or more examples each"
            f"{have}{too_few}. Label more examples; an intent with fewer is still predicted "
            "through its examples and anchor."
        )
    return left_out


__all__ = ["MIN_EXAMPLES", "Trainable", "check_trainable", "trainable"]
