"""The report's first paragraph: what the numbers mean, in sentences a manager reads.

Built only from :class:`ReportData`: the headline share and its change from the frozen encoder,
the intents that improved most and those that still fail most (with an example each). Handles a
project with no test split (cross-validation), a model that got worse ("down"), multi-label
projects (micro-F1 wording) and projects with fewer than three intents. Intent names come out as
``*name*`` (made ``<em>`` after escaping by :func:`app.report.data.rich`).

Example:
    >>> d = ReportData("p", "v2", "h", metrics={"accuracy": 0.866},
    ...                baseline_metrics={"accuracy": 0.842}, n_evaluated=500)
    >>> summary_sentences(d)[0]
    '86.6 % of the 500 test questions go to the right intent, up 2.4 points from the base model (84.2 % before training).'
"""

from __future__ import annotations

from app.report.data import ReportData, finite, pct
from core.retrieval.explain import emphasised, literal

TOP = 3  # intents named in each list
MIN_GAIN = 0.005  # an F1 change smaller than this is not an improvement


def _plural(n: int, one: str, many: str) -> str:
    return one if n == 1 else many.format(n=n)


def _quote(text: str, limit: int = 90) -> str:
    text = " ".join(text.split())
    return "“" + literal(text if len(text) <= limit else text[: limit - 1].rstrip() + "…") + "”"


def _headline(d: ReportData) -> str:
    value = finite(d.metrics.get(d.primary))
    if value is None:
        return "No evaluation was recorded for this model version."
    n = f"{d.n_evaluated:,} " if d.n_evaluated else ""
    if d.cross_validated:
        where = (
            f"the {n}labelled examples, each predicted from the others "
            "(cross-validation: the project has no test questions yet)"
        )
    else:
        where = f"the {n}test questions"
    if d.multi_label:
        lead = f"The model names the right intents with a micro-F1 of {pct(value)} on {where}"
    else:
        lead = f"{pct(value)} of {where} go to the right intent"
    if d.is_baseline:
        return f"{lead}. No retrained model is active yet: these are the base model's scores."
    before = finite(d.baseline_metrics.get(d.primary))
    if before is None:
        return f"{lead}."
    gain = 100 * (value - before)
    if abs(gain) < 0.05:
        trend = "the same as the base model"
    else:
        trend = f"{'up' if gain > 0 else 'down'} {abs(gain):.1f} points from the base model"
    return f"{lead}, {trend} ({pct(before)} before training)."


def _improved(d: ReportData) -> str:
    if d.is_baseline or not d.baseline_per_intent_f1:
        return ""
    gains = [
        (after - before, name, before, after)
        for name, after in d.per_intent_f1.items()
        if (before := d.baseline_per_intent_f1.get(name)) is not None
    ]
    best = sorted((g for g in gains if g[0] >= MIN_GAIN), key=lambda g: (-g[0], g[1]))[:TOP]
    if not best:
        return "No intent improved with training."
    items = ", ".join(f"{emphasised(name)} (F1 {pct(b)} → {pct(a)})" for _, name, b, a in best)
    head = _plural(len(best), "The intent that improved most", "The {n} intents that improved most")
    return f"{head}: {items}."


def _failing(d: ReportData) -> str:
    if not d.per_intent_f1:
        return ""
    worst = sorted(
        ((f1, name) for name, f1 in d.per_intent_f1.items() if f1 < 1.0),
        key=lambda w: (w[0], w[1]),
    )[:TOP]
    if not worst:
        return "Every intent is recognised without a miss."
    items = []
    for f1, name in worst:
        miss = d.misses.get(name)
        example = f"; e.g. {_quote(miss[0])} went to {emphasised(miss[1])}" if miss else ""
        items.append(f"{emphasised(name)} (F1 {pct(f1)}{example})")
    head = _plural(len(worst), "The intent that still fails most", "The {n} that still fail most")
    return f"{head}: {'; '.join(items)}."


def summary_parts(d: ReportData) -> tuple[list[str], list[str]]:
    """The summary as plain sentences (``*intent*`` marks names): the lead (what the model knows
    and how often it is right) and the intent lists; empty parts left out."""
    lead = []
    n = d.n_intents or len(d.per_intent_f1)
    if n and d.n_examples:
        lead.append(
            f"The model knows {n:,} {_plural(n, 'intent', 'intents')}, learnt from "
            f"{d.n_examples:,} labelled examples."
        )
    lead.append(_headline(d))
    return lead, [s for s in (_improved(d), _failing(d), _fallback(d)) if s]


def _fallback(d: ReportData) -> str:
    """How many test questions would go to the fallback (no intent), when detection is on."""
    if d.oos_target is None or d.cross_validated or not d.n_evaluated:
        return ""
    share = d.fallback / d.n_evaluated
    return (
        f"With out-of-scope detection on (it keeps {d.oos_target:.0%} of each intent's own "
        f"questions), {d.fallback:,} of the {d.n_evaluated:,} test questions ({share:.1%}) "
        "would get no intent and go to the fallback answer."
    )


def summary_sentences(d: ReportData) -> list[str]:
    """:func:`summary_parts` as one list of sentences."""
    lead, lists = summary_parts(d)
    return lead + lists
