"""The one rule for "is this project multi-label?".

A project is multi-label when at least :data:`MULTI_LABEL_SHARE` of its labelled rows carry two or
more intents. A share, not "any row", so one stray double label in a thousand rows does not switch
a single-label project to the multi-label decision (the head and per-intent thresholds); below it,
a row with two intents still counts for both under the nearest-example rule.

Example:
    >>> is_multilabel([("a", "b"), ("a",)]), is_multilabel([("a", "b")] + [("a",)] * 99)
    (True, False)
"""

from __future__ import annotations

from collections.abc import Sequence

MULTI_LABEL_SHARE = 0.05


def is_multilabel(label_sets: Sequence[Sequence[str]]) -> bool:
    """True when at least 5 % of the labelled rows (rows with no intent are not counted) carry
    two or more intents."""
    labelled = [set(labels) for labels in label_sets if labels]
    return is_multilabel_count(sum(len(labels) > 1 for labels in labelled), len(labelled))


def is_multilabel_count(with_two_or_more: int, labelled: int) -> bool:
    """:func:`is_multilabel` from the counts alone (a pool keeps them as it changes)."""
    return labelled > 0 and with_two_or_more / labelled >= MULTI_LABEL_SHARE
