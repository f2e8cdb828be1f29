"""The Data tab's table as a labelling surface: one page of utterances with their intents and the
model's prediction beside them, filtered and sorted by what the model says.

A labelled training utterance is predicted *without itself* (leave-one-out: its own copy in the
pool would always win), so "gold ≠ predicted" finds the examples the others disagree with. Plain
filters (split, intent, text) run in the database and a page costs one query plus the predictions
of its rows; filters and sorts on the prediction need every matching row predicted, so they look
at the first :data:`MAX_SCAN` matching rows (the page says so when it stopped there).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

from app.access import ProjectHandle
from app.serving.live import LivePools
from storage.utterances import UtteranceRow, count_utterances, filtered_ids, list_utterances

PAGE_SIZE = 100
MAX_SCAN = 5000
COLUMNS = ["id", "text", "intents", "split", "predicted", "score"]
SORTS = ("file", "score_low", "score_high")


@dataclass(frozen=True)
class TableQuery:
    """What the table shows: database filters, prediction filters, sort and page (from 1)."""

    intent: str | None = None  # "(none)" = no intent
    split: str | None = None
    search: str | None = None
    predicted: str | None = None
    disagree: bool = False  # only rows whose prediction is not among their intents
    below: float | None = None  # only rows whose prediction scores below this
    sort: str = "file"
    page: int = 1
    page_size: int = PAGE_SIZE

    @property
    def needs_scan(self) -> bool:
        return bool(self.predicted or self.disagree or self.below is not None) or (
            self.sort != "file"
        )


@dataclass(frozen=True)
class TablePage:
    rows: list[dict[str, Any]]
    total: int
    page: int
    pages: int
    notes: list[str] = field(default_factory=list)

    def caption(self) -> str:
        """The table's own line, e.g. ``Rows 101–200 of 1,423 · page 2 of 15``."""
        if not self.total:
            return "No utterance matches these filters."
        first = (self.page - 1) * PAGE_SIZE + 1
        last = first + len(self.rows) - 1
        line = f"Rows {first:,}–{last:,} of {self.total:,} · page {self.page} of {self.pages}"
        return " · ".join([line, *self.notes])


def _predict(live: LivePools, pid: int, rows: list[UtteranceRow]) -> list[tuple[str, float]]:
    """Each row's top intent and its score as the live Predictor ranks it (its anchors, ``k``
    and rule), a pool row scored without itself (leave-one-out): its ranking's first place
    (:meth:`Predictor.tops`), without the evidence of every intent, which the table does not
    show."""
    if not rows:
        return []
    pool = live.pool(pid)
    if len(pool.index) == 0:
        return [("", math.nan)] * len(rows)
    vectors = live.cache.encode(pool.encoder, [pool.text_of(r) for r in rows])
    found = pool.predictor.tops(vectors, exclude_ids=[r.id for r in rows])
    return [
        (top or "", score if top else math.nan)
        for top, score in zip(found.intents, found.scores.tolist(), strict=True)
    ]


def _record(row: UtteranceRow, predicted: tuple[str, float]) -> dict[str, Any]:
    name, score = predicted
    return {
        "id": row.id,
        "text": row.text,
        "intents": list(row.labels),
        "split": row.split,
        "version": row.version,
        "predicted": name,
        "score": None if math.isnan(score) else round(score, 2),
    }


def matching_ids(live: LivePools, p: ProjectHandle, q: TableQuery) -> list[int]:
    """The ids of every row the filters match, on every page (for a bulk action on them; the
    prediction filters look at the first :data:`MAX_SCAN` rows, as the table does)."""
    if q.needs_scan:
        every = replace(q, page=1, page_size=MAX_SCAN)
        return [r["id"] for r in table_page(live, p, every).rows]
    with live.db.session() as s:
        return filtered_ids(s, p.id, intent=q.intent, split=q.split, search=q.search)


def table_page(live: LivePools, p: ProjectHandle, q: TableQuery) -> TablePage:
    """One page of the table (see the module's docstring for what each filter costs)."""
    if q.sort not in SORTS:
        raise ValueError(f"Unknown sort {q.sort!r}; use one of {', '.join(SORTS)}.")
    filters: dict[str, Any] = {
        "intent": q.intent or None,
        "split": q.split or None,
        "search": q.search or None,
    }
    size = max(1, q.page_size)
    pid = p.id
    with live.db.session() as s:
        if not q.needs_scan:
            total = count_utterances(s, pid, **filters)
            pages = max(1, math.ceil(total / size))
            page = min(max(1, q.page), pages)
            rows = list_utterances(s, pid, **filters, limit=size, offset=(page - 1) * size)
        else:
            rows = list_utterances(s, pid, **filters, limit=MAX_SCAN + 1)
    if not q.needs_scan:
        records = [_record(r, p) for r, p in zip(rows, _predict(live, pid, rows), strict=True)]
        return TablePage(records, total, page, pages)

    notes = []
    if len(rows) > MAX_SCAN:
        rows = rows[:MAX_SCAN]
        notes.append(f"prediction filters and sorts looked at the first {MAX_SCAN:,} rows")
    records = [_record(r, p) for r, p in zip(rows, _predict(live, pid, rows), strict=True)]
    if q.predicted:
        records = [r for r in records if r["predicted"] == q.predicted]
    if q.disagree:
        records = [r for r in records if r["intents"] and r["predicted"] not in r["intents"]]
    if q.below is not None:
        records = [r for r in records if r["score"] is not None and r["score"] < q.below]
    if q.sort != "file":
        sign = 1 if q.sort == "score_low" else -1
        records.sort(key=lambda r: sign * (r["score"] if r["score"] is not None else 2.0))
    pages = max(1, math.ceil(len(records) / size))
    page = min(max(1, q.page), pages)
    return TablePage(records[(page - 1) * size : page * size], len(records), page, pages, notes)
