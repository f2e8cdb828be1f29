"""The Conflicts view's use cases: find near-duplicates with different intents, likely mislabels
and overlapping intent pairs in a project's labelled rows (`train` and `test`), ranked in one
list, each with its one-click fixes; apply a fix through the existing safe, undoable actions
(one undo batch each); order labelled rows by how likely they are mislabelled (the queue).
A conflict says which of its rows are `test` rows, and a fix that changes one needs
``confirm_test`` (the test split reports the accuracy: a fix that follows the other examples' or
the model's opinion bends it towards the model).

The rows are encoded with the project's **frozen base encoder** (through the embedding cache):
a tuned encoder was trained on these very labels, mislabels included, and would pull a wrong
label towards its wrong intent, hiding it. The computation is :func:`core.design.find_conflicts`.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace

from app.access import ProjectHandle
from app.services.labelling import bulk as bulk_svc
from app.services.labelling import data as data_svc
from app.services.labelling import history
from app.services.models import evaluation as eval_svc
from app.serving.live import LivePools
from core.design import ConflictReport, IntentOverlap, LabelIssue, NearDuplicate, find_conflicts
from storage.db import Database
from storage.utterances import UtteranceRow, labelled_pool, rows_by_id

logger = logging.getLogger(__name__)

KINDS = {
    "duplicate": "near-duplicate",
    "mislabel": "likely mislabelled",
    "overlap": "overlapping intents",
}
FIXES = ("relabel", "delete", "move", "merge")


@dataclass(frozen=True)
class Fix:
    """One click that resolves a conflict: ``relabel`` / ``move`` give ``ids`` the ``intents``
    (``versions``: as they were when found, so a row changed since is refused); ``delete``
    removes ``ids``; ``merge`` merges ``intents[0]`` into ``intents[1]``."""

    action: str
    label: str
    ids: tuple[int, ...] = ()
    intents: tuple[str, ...] = ()
    versions: tuple[int, ...] = ()


@dataclass(frozen=True)
class Conflict:
    kind: str
    severity: float
    title: str  # one line for the ranked table
    evidence: tuple[str, ...]  # the utterances behind it, one line each
    ids: tuple[int, ...]
    fixes: tuple[Fix, ...]
    test_ids: tuple[int, ...] = ()  # those of ``ids`` in the `test` split


def _rows(db: Database, p: ProjectHandle) -> tuple[int, list[UtteranceRow]]:
    with db.session() as s:
        return p.id, [*labelled_pool(s, p.id, "train"), *labelled_pool(s, p.id, "test")]


def _names(labels: Sequence[str]) -> str:
    return ", ".join(labels) or "no intent"


def _quote(row: UtteranceRow) -> str:
    return f"#{row.id} “{row.text}” — {_names(row.labels)} ({row.split})"


def _duplicate(d: NearDuplicate, rows: list[UtteranceRow]) -> Conflict:
    keep, change = rows[d.keep], rows[d.change]
    target = _names(keep.labels)
    return Conflict(
        "duplicate",
        d.severity,
        f"#{change.id} ({_names(change.labels)}) says what #{keep.id} ({target}) says "
        f"(similarity {d.similarity:.2f})",
        (_quote(keep), _quote(change)),
        (keep.id, change.id),
        (
            Fix(
                "relabel",
                f"Relabel #{change.id} to {target}",
                (change.id,),
                keep.labels,
                (change.version,),
            ),
            Fix("delete", f"Delete #{change.id}", (change.id,)),
        ),
    )


def _mislabel(x: LabelIssue, rows: list[UtteranceRow]) -> Conflict:
    row = rows[x.row]
    return Conflict(
        "mislabel",
        x.severity,
        f"#{row.id} is labelled {x.given}; the other examples say {x.suggested} "
        f"({x.suggested_probability:.0%}; {x.given}: {x.given_probability:.1%})",
        (_quote(row),),
        (row.id,),
        (
            Fix(
                "relabel",
                f"Relabel #{row.id} to {x.suggested}",
                (row.id,),
                (x.suggested,),
                (row.version,),
            ),
            Fix("delete", f"Delete #{row.id}", (row.id,)),
        ),
    )


def _overlap(o: IntentOverlap, rows: list[UtteranceRow]) -> Conflict:
    moves = [rows[e.row] for e in o.moves()]
    fixes = []
    if moves:
        fixes.append(
            Fix(
                "move",
                f"Move {len(moves)} example(s) of {o.a} that read as {o.b} to {o.b}",
                tuple(r.id for r in moves),
                (o.b,),
                tuple(r.version for r in moves),
            )
        )
    fixes.append(Fix("merge", f"Merge {o.a} into {o.b}", intents=(o.a, o.b)))
    return Conflict(
        "overlap",
        o.severity,
        f"{o.a} ({o.n_a}) and {o.b} ({o.n_b}): {o.a_as_b} of {o.a} read as {o.b}, "
        f"{o.b_as_a} of {o.b} as {o.a}; centres {o.centroid_similarity:.2f} similar",
        tuple(
            f"{_quote(rows[e.row])} → reads as {e.toward} (margin {e.margin:+.2f})"
            for e in o.examples
        ),
        tuple(rows[e.row].id for e in o.examples),
        tuple(fixes),
    )


def report(live: LivePools, p: ProjectHandle) -> tuple[ConflictReport | None, list[UtteranceRow]]:
    """The core report over the project's labelled rows (None with fewer than 2 intents)."""
    pid, rows = _rows(live.db, p)
    if len({name for r in rows for name in r.labels}) < 2 or len(rows) < 4:
        return None, rows
    base = live.models.base_encoder(p.base_encoder)
    vectors = live.cache.encode(base, [r.text for r in rows])
    # the live pool's rule, k and anchors, in the base encoder's space the rows are read in
    factory = live.factories.predictor_factory(pid, base, p.settings).replace(
        k=live.pool(pid).predictor.k
    )
    return find_conflicts(vectors, [r.labels for r in rows], factory=factory), rows


def find(live: LivePools, p: ProjectHandle, kind: str | None = None) -> list[Conflict]:
    """Every conflict of the project (or of one ``kind``, see :data:`KINDS`), most severe first.

    Example (a flip among well-labelled rows)::

        >>> conflicts = find(serving_state, "shop")  # doctest: +SKIP
        >>> conflicts[0].kind, conflicts[0].fixes[0].label  # doctest: +SKIP
        ('mislabel', 'Relabel #12 to card_arrival')
    """
    if kind and kind not in KINDS:
        raise ValueError(f"Unknown kind of conflict {kind!r}; use one of {', '.join(KINDS)}.")
    found, rows = report(live, p)
    if found is None:
        return []
    out = [
        _duplicate(c, rows)
        if isinstance(c, NearDuplicate)
        else _mislabel(c, rows)
        if isinstance(c, LabelIssue)
        else _overlap(c, rows)
        for c in found.ranked()
    ]
    in_test = {r.id for r in rows if r.split == "test"}
    return [
        replace(c, test_ids=tuple(i for i in c.ids if i in in_test))
        for c in out
        if not kind or c.kind == kind
    ]


def likely_mislabelled(live: LivePools, p: ProjectHandle) -> list[int]:
    """Ids of the labelled rows most likely mislabelled, most likely first (the queue's order)."""
    found, rows = report(live, p)
    return [] if found is None else [rows[x.row].id for x in found.label_issues]


def apply(db: Database, p: ProjectHandle, fix: Fix, *, confirm_test: bool = False) -> str:
    """Apply one fix as one undoable batch and say what was done. A fix that changes a `test`
    row needs ``confirm_test`` (refused otherwise, nothing changed)."""
    if fix.action not in FIXES:
        raise ValueError(f"Unknown fix {fix.action!r}; use one of {', '.join(FIXES)}.")
    if fix.action != "merge":
        eval_svc.refuse_unconfirmed_test_change(db, p, fix.ids, confirm_test)
    if fix.action == "merge":
        source, target = fix.intents
        n = data_svc.merge_intents(db, p, [source], target)
        return f"Merged {source} into {target} ({n} utterance(s))."
    if fix.action == "delete":
        (uid,) = fix.ids
        data_svc.delete_utterance(db, p, uid)
        return f"Deleted #{uid}."
    if fix.action == "relabel":
        (uid,) = fix.ids
        row = data_svc.label_utterance(
            db, p, uid, list(fix.intents), expected_version=fix.versions[0]
        )
        return f"#{uid} → {_names(row['labels'])}."
    _check_versions(db, p, fix)
    plan = bulk_svc.label_many(
        db, p, list(fix.ids), list(fix.intents), relabel_labelled=True, all_or_nothing=True
    )
    return f"Moved {len(plan.change)} example(s) to {_names(fix.intents)}."


def _check_versions(db: Database, p: ProjectHandle, fix: Fix) -> None:
    with db.session() as s:
        now = {r.id: r.version for r in rows_by_id(s, p.id, list(fix.ids))}
    changed = [uid for uid, v in zip(fix.ids, fix.versions, strict=True) if now.get(uid) != v]
    if changed:
        raise ValueError(
            f"#{', #'.join(map(str, changed))} changed since the conflicts were found; "
            "find them again. Nothing was changed."
        )


def undo(db: Database, p: ProjectHandle) -> str:
    """Undo the last change in the project (a fix is one batch)."""
    return history.undo(db, p)
