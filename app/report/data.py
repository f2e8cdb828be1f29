"""What the report shows (:class:`ReportData`, plain data) and how its numbers are written for
people: rates as percentages, changes in points, counts as integers, every name escaped."""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from app.plots import MapData
from core.retrieval.explain import sentence_parts

SPACE_KEYS = ("silhouette", "alignment", "uniformity")
# Which direction is better, for the colour of a change.
LOWER_IS_BETTER = frozenset({"alignment", "uniformity", "loss", "error", "ece"})
# Shares in [0, 1], written as percentages with their change in points.
RATE_KEYS = frozenset(
    {"accuracy", "macro_f1", "micro_f1", "exact_match", "micro_precision", "micro_recall"}
)
# Display name and a one-line meaning of each metric the report may show.
GLOSSARY: dict[str, tuple[str, str]] = {
    "accuracy": ("Accuracy", "share of questions whose top intent is the right one"),
    "micro_f1": (
        "Micro-F1",
        "one score over every intent the questions carry: intents missed and intents wrongly "
        "added both count against it",
    ),
    "macro_f1": (
        "Macro-F1",
        "F1 (found, and not confused with others) averaged over intents, so a small intent "
        "counts as much as a big one",
    ),
    "exact_match": ("Exact match", "share of questions whose whole set of intents is right"),
    "silhouette": (
        "Silhouette",
        "how clearly each intent's utterances sit apart from the others' (−1 to 1, higher is "
        "better)",
    ),
    "alignment": ("Alignment", "how close two utterances of the same intent are (lower is better)"),
    "uniformity": ("Uniformity", "how evenly all utterances spread out (lower is better)"),
}


@dataclass
class ReportData:
    """Everything the report shows, as plain data (the app and the CLI fill it in)."""

    project: str
    model_version: str
    dataset_hash: str
    baseline_name: str = "frozen encoder"
    # how the version came to be, when it is worth saying: "retrained automatically after new
    # labels", "first pass, step 25 of 100" (an anytime retrain stopped before it improved it)
    version_note: str = ""
    # Headline metrics (accuracy, macro F1, ...) of the active model and of the frozen encoder;
    # ``primary`` names the one the summary leads with (``micro_f1`` for multi-label projects).
    metrics: dict[str, float] = field(default_factory=dict)
    baseline_metrics: dict[str, float] = field(default_factory=dict)
    primary: str = "accuracy"
    # How the metrics were measured: "test" (the held-out test split) or "cv5" (5-fold
    # cross-validation of the labelled pool), on how many utterances.
    evaluated_on: str = "test"
    n_evaluated: int = 0
    n_examples: int = 0  # labelled training examples (the pool)
    n_intents: int = 0  # intents of the project (0: those with a per-intent F1)
    is_baseline: bool = False  # the active model is the frozen encoder itself
    per_intent_f1: dict[str, float] = field(default_factory=dict)
    baseline_per_intent_f1: dict[str, float] = field(default_factory=dict)
    # One failed utterance per intent: intent -> (utterance, what it was taken for).
    misses: dict[str, tuple[str, str]] = field(default_factory=dict)
    confusion_labels: list[str] = field(default_factory=list)
    confusion_matrix: np.ndarray | Sequence[Sequence[float]] | None = None
    # The before (frozen) / after (active) maps and their space metrics.
    map_before: MapData | None = None
    map_after: MapData | None = None
    space_before: dict[str, float] = field(default_factory=dict)
    space_after: dict[str, float] = field(default_factory=dict)
    # Evidence cards: ``Explanation.to_dict()`` of chosen example utterances.
    evidence: list[dict[str, Any]] = field(default_factory=list)
    # Out of scope: how many test questions the active model would answer with no intent
    # (``fallback`` of ``n_evaluated``) at the project's target in-scope recall (None: off).
    fallback: int = 0
    oos_target: float | None = None
    generated_at: str = ""
    notes: str = ""
    # A team project's agreement (app.services.labelling.team_answers.report_view); None: nobody was assigned.
    team: dict[str, Any] | None = None

    @property
    def multi_label(self) -> bool:
        return self.primary == "micro_f1"

    @property
    def cross_validated(self) -> bool:
        return self.evaluated_on.startswith("cv")


def esc(value: object) -> str:
    return html.escape(str(value), quote=True)


def rich(text: str) -> str:
    """A sentence that marks names as ``*intent*`` (:func:`core.retrieval.explain.sentence_parts`)
    as HTML: the names in ``<em>``, all text escaped; a ``*`` of a quoted utterance stays one.

    Example:
        >>> rich("Predicted *greet* like '{{7\\\\*7}}' <b>")
        'Predicted <em>greet</em> like &#x27;{{7*7}}&#x27; &lt;b&gt;'
    """
    return "".join(f"<em>{esc(t)}</em>" if on else esc(t) for t, on in sentence_parts(text))


def finite(value: object) -> float | None:
    """``value`` as a float, or ``None`` when it is missing or not a finite number."""
    try:
        f = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def pct(value: object) -> str:
    """A share as a percentage for people: ``0.8664`` → ``86.6 %``.

    Example:
        >>> pct(0.8664), pct(1.0), pct(None)
        ('86.6 %', '100 %', '—')
    """
    f = finite(value)
    if f is None:
        return "—"
    text = f"{100 * f:.1f}".removesuffix(".0")
    return f"{text} %"


def num(value: object, digits: int = 2) -> str:
    """A number for people: integers stay integers, others are rounded to ``digits``.

    Example:
        >>> num(1423.0), num(0.07123), num(float("nan"))
        ('1,423', '0.07', '—')
    """
    f = finite(value)
    if f is None:
        return "—"
    if f.is_integer() and abs(f) >= 1:
        return f"{int(f):,}"
    return f"{f:.{digits}f}"


def change(key: str, before: object, after: object) -> tuple[str, str]:
    """The change from ``before`` to ``after`` as text (points for shares) and its CSS class
    (``better``/``worse``/empty).

    Example:
        >>> change("accuracy", 0.842, 0.866)
        ('+2.4 pts', 'better')
        >>> change("alignment", 0.4, 0.5)
        ('+0.10', 'worse')
    """
    b, a = finite(before), finite(after)
    if b is None or a is None:
        return "—", ""
    d = a - b
    rate = key in RATE_KEYS
    if abs(d) < (0.0005 if rate else 0.005):
        return "no change", ""
    text = f"{100 * d:+.1f} pts" if rate else f"{d:+.2f}"
    good = d < 0 if key in LOWER_IS_BETTER else d > 0
    return text, "better" if good else "worse"


def metric_text(key: str, value: object) -> str:
    return pct(value) if key in RATE_KEYS else num(value)
