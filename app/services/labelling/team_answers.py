"""What a team's answers add up to: agreement on the overlap (:func:`measure`), the Team view's
and the report's overview, and the raw answers as JSON lines. Reads only; the rules of answering
and deciding are :mod:`app.services.labelling.team`'s."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from app.access import ProjectHandle
from app.access.actions import EXPORT
from app.access.policy import answer_value
from app.services.labelling.team import disputes, is_team_project, progress
from core.labelling.agreement import Agreement, agreement
from core.retrieval.scope import OUT_OF_SCOPE
from storage import team as repo
from storage.db import Database
from storage.utterances import list_utterances


def measure(db: Database, p: ProjectHandle) -> Agreement:
    """Agreement on the overlap items (every answer given so far, skips left out)."""
    with db.session() as s:
        rows = repo.answers(s, p.id, repo.overlap_ids(s, p.id))
    given: dict[int, dict[str, frozenset[str]]] = {}
    for a in rows:
        value = answer_value(a.action, a.intents)
        if value is not None:
            given.setdefault(a.utterance_id, {})[a.annotator] = value
    return agreement(given)


def export_answers(db: Database, p: ProjectHandle, out: Path) -> Path:
    """Every annotator's answer, one JSON object per line (with the item's accepted intents
    now): the raw annotations."""
    p.require_action(EXPORT)  # the raw annotations leave the app: as a project's export
    with db.session() as s:
        rows = repo.answers(s, p.id)
        found = {
            r.id: r for r in list_utterances(s, p.id, ids=sorted({a.utterance_id for a in rows}))
        }
    with out.open("w", encoding="utf-8") as f:
        for a in rows:
            item = found.get(a.utterance_id)
            record: dict[str, Any] = {
                "id": a.utterance_id,
                "text": item.text if item else "",
                "annotator": a.annotator,
                "answer": a.action,
                "intents": [OUT_OF_SCOPE] if a.action == "oos" else list(a.intents),
                "answered_at": a.answered_at.isoformat(timespec="seconds"),
                "accepted": list(item.labels) if item and item.split != "unlabelled" else None,
            }
            f.write(json.dumps(record, ensure_ascii=False) + "\n")
    return out


def overview(db: Database, p: ProjectHandle, examples: int = 3) -> dict[str, Any]:
    """What the Team view and the report show: ``progress`` rows, ``agreement``
    (:class:`~core.labelling.agreement.Agreement`), ``waiting`` (disagreements to review now)
    and ``intents`` rows (lowest agreement first, with up to ``examples`` disputed texts)."""
    found = measure(db, p)
    waiting = len(disputes(db, p))
    with db.session() as s:
        ids = sorted({i for r in found.intents for i in r.disputed[:examples]})
        texts = {r.id: r.text for r in list_utterances(s, p.id, ids=ids)}
    progress_rows = [
        {"annotator": who, "assigned": n, "answered": done, "left": n - done}
        for who, (n, done) in progress(db, p).items()
    ]
    intents = [
        {
            "intent": r.intent,
            "items": r.items,
            "agreement": r.value,
            "statistic": "κ" if r.statistic == "kappa" else "α",
            "disputed": len(r.disputed),
            "examples": [texts[i] for i in r.disputed[:examples] if i in texts],
        }
        for r in found.intents
        if r.disputed
    ]
    return {"progress": progress_rows, "agreement": found, "waiting": waiting, "intents": intents}


def report_view(db: Database, p: ProjectHandle) -> dict[str, Any] | None:
    """The stakeholder report's plain data (:func:`app.report.team.agreement_section`); None
    when nobody was assigned in the project."""
    if not is_team_project(db, p):
        return None
    view = overview(db, p)
    found: Agreement = view["agreement"]
    return {
        "items": found.items,
        "disputed": len(found.disputed),
        "alpha": found.alpha,
        "pairs": [asdict(pair) for pair in found.pairs],
        "intents": view["intents"],
    }
