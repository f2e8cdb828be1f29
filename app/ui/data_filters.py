"""The Data tab's filters as one value: the widgets' values read into one
:class:`app.services.labelling.table.TableQuery` (what the table, its pages and the bulk label's preview
take), and what a preview was counted for."""

from __future__ import annotations

import dataclasses
from typing import Any

from app.services.labelling.table import TableQuery

ALL = "(all)"


def read_filters(
    intent: str, split: str, search: str, predicted: str, disagree: bool, below: Any, sort: str
) -> TableQuery:
    """The filter widgets' values (intent, split, text, predicted, gold ≠ predicted, score
    below, sort) as one query, from its first page.

    Example:
        >>> read_filters(ALL, "train", "card", ALL, False, "0.5", "file")
        TableQuery(intent=None, split='train', search='card', predicted=None, disagree=False, below=0.5, sort='file', page=1, page_size=100)
    """
    return TableQuery(
        intent=None if intent in (ALL, None) else intent,
        split=None if split in (ALL, None) else split,
        search=search or None,
        predicted=None if predicted in (ALL, None) else predicted,
        disagree=bool(disagree),
        below=None if below in (ALL, None, "") else float(below),
        sort=sort or "file",
    )


def counted_for(q: TableQuery, target: str | None, relabel: bool) -> list[Any]:
    """What a bulk label's preview of ``q`` is for, comparable across events (JSON-safe)."""
    shown = dataclasses.asdict(dataclasses.replace(q, page=1))
    return [sorted(shown.items()), target, bool(relabel)]
