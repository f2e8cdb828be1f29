"""The model card's metrics, as tables a person reads: the headline numbers beside the frozen
base's, the intents weakest first, the pairs most often confused, and each check the version
passed (its gate, its int8 copy's parity, its out-of-scope calibration) as a short list. The
manifest keeps every number; the card shows what a reader needs, never a raw dict (a BANKING77
card held 60-88 KB of Python dicts: the confusion matrix of 77 intents among them).

Example:
    >>> lines = metrics_section({"accuracy": 0.91, "n": 40, "split": "test",
    ...     "per_intent": {"a": {"precision": 1.0, "recall": 0.8, "f1": 0.89, "support": 5}}},
    ...     {"accuracy": 0.85})
    >>> print("\\n".join(lines[:7]))
    ## Metrics
    <BLANKLINE>
    Measured on 40 utterances of the test split.
    <BLANKLINE>
    | metric | this model | frozen base |
    | --- | --- | --- |
    | accuracy | 0.9100 | 0.8500 |
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

# The headline numbers, in the order shown (any other number of the record follows them).
HEADLINES = ("accuracy", "macro_f1", "micro_f1", "exact_match", "silhouette", "threshold")
# What the sentence above the table says, not the table.
_ABOUT = ("primary", "n", "split", "k", "folds", "multi_label", "encoder", "version_label")
# Shown as their own tables or lists below.
_SECTIONS = ("per_intent", "confusion", "cooccurrence", "base", "fp32")
_CHECKS = {
    "gate": "Promotion gate",
    "int8": "int8 copy",
    "oos_calibration": "Out-of-scope calibration",
    "reference": "Compared against",
    "head": "Multi-label head",
}
SHOW_PAIRS = 10
SHOW_ITEMS = 8  # of a list in a check's line
SHOW_CHARS = 160  # of a check's value


def metrics_section(metrics: Mapping[str, Any], base: Mapping[str, Any]) -> list[str]:
    """The card's ``## Metrics`` lines for a version's ``metrics`` and the frozen base's
    (``base``, on the same rows); none when nothing was measured."""
    if not metrics:
        return []
    lines = ["## Metrics", "", _measured(metrics), ""]
    lines += ["| metric | this model | frozen base |", "| --- | --- | --- |"]
    for key in _numbers(metrics):
        lines.append(f"| {key} | {fmt(metrics.get(key))} | {fmt(base.get(key))} |")
    lines.append("")
    lines += _per_intent(metrics.get("per_intent"))
    lines += _confused(metrics.get("confusion"))
    lines += _pairs(metrics.get("cooccurrence"))
    fp32 = metrics.get("fp32")
    if isinstance(fp32, Mapping) and fp32:
        lines += ["### The fp32 encoder on the same rows", ""]
        lines += [f"- {k}: {fmt(fp32.get(k))}" for k in _numbers(fp32)] + [""]
    for key, title in _CHECKS.items():
        if isinstance(metrics.get(key), Mapping) and metrics[key]:
            lines += [f"### {title}", "", *_check(metrics[key]), ""]
    return lines


def fmt(value: Any) -> str:
    """A number or a short value as the card writes it (floats to 4 places, ``–`` for none)."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.4f}"
    return "–" if value is None else str(value)


def _measured(metrics: Mapping[str, Any]) -> str:
    n, split = metrics.get("n"), metrics.get("split") or "test"
    said = f"Measured on {n} utterances" if n is not None else "Measured"
    said += " by cross-validation" if split == "cross-validation" else f" of the {split} split"
    if metrics.get("folds"):
        said += f" ({metrics['folds']} folds)"
    if metrics.get("encoder"):
        said += f", with the {metrics['encoder']} encoder"
    primary = metrics.get("primary")
    return said + (f"; the primary metric is {primary}." if primary else ".")


def _numbers(metrics: Mapping[str, Any]) -> list[str]:
    """The keys of the record's single numbers: the headlines first, then the others."""
    found = [
        k
        for k, v in metrics.items()
        if isinstance(v, int | float) and not isinstance(v, bool) and k not in _ABOUT
    ]
    return [k for k in HEADLINES if k in found] + [k for k in found if k not in HEADLINES]


def _per_intent(table: Any) -> list[str]:
    """Every intent's precision, recall, F1 and support, the weakest F1 first."""
    if not isinstance(table, Mapping) or not table:
        return []
    rows = sorted(
        ((name, s) for name, s in table.items() if isinstance(s, Mapping)),
        key=lambda item: (_float(item[1].get("f1")), item[0]),
    )
    lines = ["### Per intent (weakest first)", ""]
    lines += ["| intent | precision | recall | F1 | support |", "| --- | --- | --- | --- | --- |"]
    for name, s in rows:
        cells = [fmt(s.get(k)) for k in ("precision", "recall", "f1", "support")]
        lines.append(f"| {_cell(name)} | {' | '.join(cells)} |")
    return [*lines, ""]


def _confused(confusion: Any) -> list[str]:
    """The :data:`SHOW_PAIRS` (true, predicted) pairs most often confused, from the matrix."""
    if not isinstance(confusion, Mapping):
        return []
    labels, matrix = confusion.get("labels") or [], confusion.get("matrix") or []
    pairs = [
        (int(count), labels[i], labels[j])
        for i, row in enumerate(matrix[: len(labels)])
        for j, count in enumerate(row[: len(labels)])
        if i != j and count
    ]
    if not pairs:
        return []
    pairs.sort(key=lambda p: (-p[0], p[1], p[2]))
    lines = ["### Most often confused", ""]
    lines += ["| intent | predicted as | times |", "| --- | --- | --- |"]
    lines += [f"| {_cell(a)} | {_cell(b)} | {n} |" for n, a, b in pairs[:SHOW_PAIRS]]
    more = len(pairs) - SHOW_PAIRS
    if more > 0:
        lines += ["", f"... and {more} more pair(s) in manifest.json."]
    return [*lines, ""]


def _pairs(rows: Any) -> list[str]:
    """Multi-label: the intent pairs most often together, gold and predicted."""
    if not isinstance(rows, Sequence) or not rows:
        return []
    lines = ["### Intents together (multi-label)", ""]
    lines += ["| intents | gold | predicted | both | recall |", "| --- | --- | --- | --- | --- |"]
    for r in rows[:SHOW_PAIRS]:
        if isinstance(r, Mapping):
            pair = _cell(f"{r.get('a')} + {r.get('b')}")
            cells = [fmt(r.get(k)) for k in ("gold", "predicted", "both", "recall")]
            lines.append(f"| {pair} | {' | '.join(cells)} |")
    return [*lines, ""]


def _check(record: Mapping[str, Any], prefix: str = "") -> list[str]:
    """A check's record as ``- key: value`` lines (nested records as ``key.sub``)."""
    lines = []
    for key, value in record.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            lines += _check(value, f"{name}.")
        else:
            lines.append(f"- {name}: {_short(value)}")
    return lines


def _short(value: Any) -> str:
    if isinstance(value, list) and len(value) > SHOW_ITEMS:
        shown = ", ".join(_short(v) for v in value[:SHOW_ITEMS])
        return f"[{shown}, ... {len(value) - SHOW_ITEMS} more]"
    if isinstance(value, list):
        return "[" + ", ".join(_short(v) for v in value) + "]"
    text = fmt(value) if not isinstance(value, Mapping) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= SHOW_CHARS else text[: SHOW_CHARS - 1] + "…"


def _cell(text: str) -> str:
    """A name in a table cell: a ``|`` would end the cell."""
    return str(text).replace("|", "\\|")


def _float(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return -1.0
