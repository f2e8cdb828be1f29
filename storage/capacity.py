"""How much a project may hold: its intents and its utterances, each checked before anything is
written, with a message that says the limit, what there is and what would be added.

The limits come with the session (``Database(max_intents=..., max_rows=...)`` puts the app's
settings ``INTENT_STUDIO_MAX_INTENTS`` and ``INTENT_STUDIO_MAX_ROWS`` in every session's
``info``), else the defaults here.
"""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from storage.errors import StorageError
from storage.tables import Intent, Utterance

# Intents a project may have, unless the session says otherwise (``Database(max_intents=...)``
# puts the app's setting in every session's ``info``).
DEFAULT_MAX_INTENTS = 2000
MAX_INTENTS_KEY = "max_intents"


def check_intent_room(
    s: Session, project_id: int | None, adding: int, *, doing: str = "this", new: str = "new"
) -> None:
    """Refuse ``adding`` new intents that would take a project (None: one not created yet) past
    its limit: ``s.info["max_intents"]``, else :data:`DEFAULT_MAX_INTENTS`. ``doing`` names what
    would add them, ``new`` what they are ("brought back" by an undo) in the message.

    Raises:
        StorageError: over the limit; nothing was changed.
    """
    if adding <= 0:
        return
    limit = int(s.info.get(MAX_INTENTS_KEY, DEFAULT_MAX_INTENTS))
    have = 0
    if project_id is not None:
        have = s.scalar(select(func.count()).where(Intent.project_id == project_id)) or 0
    if have + adding > limit:
        raise StorageError(
            f"A project may have at most {limit:,} intents; {doing} would make "
            f"{have + adding:,} ({have:,} now, {adding:,} {new}). Nothing was changed."
        )


# Utterances a project may hold, unless the session says otherwise (``Database(max_rows=...)``,
# the setting INTENT_STUDIO_MAX_ROWS): past it an import or a new row is refused with a message.
DEFAULT_MAX_ROWS = 250_000
MAX_ROWS_KEY = "max_rows"


def check_row_room(
    s: Session, project_id: int, adding: int, *, doing: str = "this", new: str = "new"
) -> None:
    """Refuse ``adding`` new utterances that would take a project past its limit:
    ``s.info["max_rows"]``, else :data:`DEFAULT_MAX_ROWS` (issue 56, row 4). ``doing`` and
    ``new`` as for :func:`check_intent_room`.

    Raises:
        StorageError: over the limit; nothing was changed.
    """
    if adding <= 0:
        return
    limit = int(s.info.get(MAX_ROWS_KEY, DEFAULT_MAX_ROWS))
    have = s.scalar(select(func.count()).where(Utterance.project_id == project_id)) or 0
    if have + adding > limit:
        raise StorageError(
            f"A project may hold at most {limit:,} utterances; {doing} would make "
            f"{have + adding:,} ({have:,} now, {adding:,} {new}). Nothing was changed: split the "
            "data into several projects, or ask the operator to raise the limit "
            "(INTENT_STUDIO_MAX_ROWS)."
        )
