"""Many utterances labelled at once in set statements: what :func:`storage.utterances.set_labels`
does to one row (labels replaced, an unlabelled row moved to `train`, the version bumped, one
audit event), for thousands in a few statements.

Row by row, a 10,000-row bulk label held SQLite's write lock for 44-77 s (issue 45 row 5); in
bulk a row takes about 0.3 ms even on a heavily loaded machine (``bench/RESULTS.md``), and the
app writes a long selection
in short transactions of a few thousand rows (:mod:`app.services.labelling.bulk`). Each call is told the
version each row had when the change was planned: a row changed since (someone else labelled it
between two transactions) or one the acting user may not change now (:mod:`storage.guard`) is
left as it is and named in the answer.

Example:
    >>> from storage.db import Database
    >>> from storage.projects import create_project
    >>> from storage.utterances import add_utterance, list_utterances
    >>> db = Database("sqlite://", trusted=True)  # storage alone: no app rule installed
    >>> with db.session() as s:
    ...     pid = create_project(s, "demo").id
    ...     a = add_utterance(s, pid, "hi there", split="unlabelled")
    ...     b = add_utterance(s, pid, "hello", split="unlabelled")
    ...     done = label_rows(s, pid, {a.id: a.version, b.id: b.version + 1}, ["greet"], batch="x")
    ...     [(r.text, r.labels, r.split) for r in list_utterances(s, pid)], done.moved == (b.id,)
    ([('hi there', ('greet',), 'train'), ('hello', (), 'unlabelled')], True)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from sqlalchemy import Table, bindparam, delete, insert, update
from sqlalchemy.orm import Session

from storage import guard
from storage.by_id import labels_of, slices, utterances_by_id
from storage.imports import event_row
from storage.label_rules import labelled_split, resolve_intents
from storage.tables import Label, LabelEvent, Utterance, utcnow


def expire_rows(s: Session) -> None:
    """Forget the session's ORM copies of utterances and labels after set statements changed
    them (their labels, splits and versions are read again on next use)."""
    for obj in list(s.identity_map.values()):
        if isinstance(obj, Utterance | Label):
            s.expire(obj)


@dataclass(frozen=True)
class Labelled:
    """What :func:`label_rows` did: the rows it changed, those someone changed since the change
    was planned (or that are gone), and those the acting user may not change now."""

    changed: tuple[int, ...]
    moved: tuple[int, ...] = ()
    protected: tuple[int, ...] = ()


def label_rows(
    s: Session,
    project_id: int,
    versions: Mapping[int, int],
    labels: Sequence[str],
    *,
    batch: str,
    user_id: int | None = None,
    create_missing_intents: bool = True,
) -> Labelled:
    """Give every utterance of ``versions`` (id -> the version the change was planned on) exactly
    ``labels`` (empty: no intent), in the caller's transaction, its audit events under ``batch``;
    a row whose version is not the one given is left as it is (:attr:`Labelled.moved`), and so
    is a row the session's item guard refuses (:attr:`Labelled.protected`)."""
    if not versions:
        return Labelled(())
    ids = list(versions)
    cols = (Utterance.text, Utterance.split, Utterance.version)
    found = {
        i: (r.text, r.split, r.version)
        for i, r in utterances_by_id(s, project_id, ids, *cols).items()
    }
    moved = [i for i in ids if i not in found or found[i][2] != versions[i]]
    same = [i for i in ids if i in found and found[i][2] == versions[i]]
    locked = guard.refused(s, project_id, same)
    free = [i for i in same if i not in locked]
    intents = resolve_intents(s, project_id, labels, create_missing=create_missing_intents)
    after = sorted(i.name for i in intents)
    current = labels_of(s, free)
    now = utcnow()
    changes: list[dict[str, Any]] = []
    events: list[dict[str, Any]] = []
    for uid in free:
        text, split0, _ = found[uid]
        split1 = labelled_split(split0, after)
        if current[uid] == after and split1 == split0:
            continue
        changes.append({"uid": uid, "new_split": split1, "now": now})
        shown = (split0, split1) if split1 != split0 else (None, None)
        events.append(
            event_row(project_id, uid, text, user_id, batch, "label", current[uid], after, *shown)
        )
    changed = [c["uid"] for c in changes]
    for part in slices(changed):
        s.execute(delete(Label).where(Label.utterance_id.in_(list(part))))
    if changed and intents:
        s.execute(
            insert(cast(Table, Label.__table__)),
            [{"utterance_id": u, "intent_id": i.id} for u in changed for i in intents],
        )
    if changes:
        t = cast(Table, Utterance.__table__)
        s.execute(
            update(t)
            .where(t.c.id == bindparam("uid"))
            .values(
                split=bindparam("new_split"), updated_at=bindparam("now"), version=t.c.version + 1
            ),
            changes,
        )
        s.execute(insert(cast(Table, LabelEvent.__table__)), events)
    expire_rows(s)
    return Labelled(tuple(changed), tuple(moved), tuple(i for i in same if i in locked))
