"""The rules the writers of labels share: one utterance at a time (:mod:`storage.utterances`),
many at once (:mod:`storage.bulk_labels`, :mod:`storage.imports`), a delete and its undo
(:mod:`storage.deleted`, :mod:`storage.audit`).

Which intents typed names stand for (a name written another way is the stored one, an unknown one
is created or refused), the split a labelled utterance moves to, and the audit event each change
writes (what an undo reads back).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence

from sqlalchemy.orm import Session

from storage.names import OUT_OF_SCOPE, NameIndex
from storage.projects import create_intent, intents_by_name, validate_intent_name
from storage.tables import Intent, LabelEvent, Utterance
from storage.texts import nfc, validate_split
from storage.unknown_intents import unknown_intent


def resolve_intents(
    s: Session, project_id: int, names: Iterable[str], *, create_missing: bool
) -> list[Intent]:
    """The intents ``names`` name: a name written another way (``Greet``, ``OUT-OF-SCOPE``) is
    the stored one (:class:`storage.names.NameIndex`); a new name is created when
    ``create_missing``, else refused naming the nearest (:mod:`storage.unknown_intents`). The
    reserved label is every project's: it is created when first used, asked or not."""
    known = intents_by_name(s, project_id)
    index: NameIndex | None = None
    out: list[Intent] = []
    for raw in names:
        name = raw if raw in known else nfc(raw).strip()
        if name not in known:
            index = index or NameIndex(known)  # built only when a name is not found as it is
            name = index.find(name) or validate_intent_name(name)
            if name not in known:
                if not create_missing and name != OUT_OF_SCOPE:
                    raise unknown_intent(name, known)
                known[name] = create_intent(s, project_id, name)
                index.add(name)
        if known[name] not in out:
            out.append(known[name])
    return out


def log_event(
    s: Session,
    u: Utterance,
    before: list[str],
    after: list[str],
    action: str,
    user_id: int | None,
    batch: str | None = None,
    split_before: str | None = None,
    split_after: str | None = None,
    served: Sequence[str] | None = None,
) -> LabelEvent:
    """Add the audit event of a change to ``u``'s labels (``before`` -> ``after``, intent names)
    or split; events of one action share ``batch`` (a new one when None) and are undone together.
    ``served``: what the model that served decided for it on the card the label answered."""
    event = LabelEvent(
        project_id=u.project_id,
        utterance_id=u.id,
        utterance_text=u.text,
        user_id=user_id,
        batch=batch or str(uuid.uuid4()),
        action=action,
        before=sorted(before),
        after=sorted(after),
        split_before=split_before,
        split_after=split_after,
        served=None if served is None else sorted(served),
    )
    s.add(event)
    return event


def labelled_split(current: str, labels: Sequence[str], chosen: str | None = None) -> str:
    """The one labelling rule: an utterance with an intent is never in `unlabelled`. Giving one
    an intent moves it to `train` (the pool) unless the person chose `test`; otherwise the split
    is the chosen one, or stays as it is.

    Example:
        >>> labelled_split("unlabelled", ["card_block"]), labelled_split("unlabelled", ["x"], "test")
        ('train', 'test')
        >>> labelled_split("unlabelled", ["x"], "unlabelled"), labelled_split("train", [])
        ('train', 'train')
    """
    split = validate_split(chosen) if chosen is not None else current
    return "train" if labels and split == "unlabelled" else split
