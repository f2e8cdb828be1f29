"""The platform agent a project was imported from (:class:`storage.tables.ImportedAgent`): kept
as its files were, so that an export writes back what the app does not model. What the files hold
is :mod:`app.formats.agents`'s business; this module stores and returns the bytes.

Example:
    >>> # with s a Session and pid a project id:
    >>> # keep_agent(s, pid, "lex-v2", zip_bytes); kept_agent(s, pid) -> KeptAgent("lex-v2", ...)
"""

from __future__ import annotations

import hashlib
from typing import NamedTuple

from sqlalchemy.orm import Session

from storage.tables import ImportedAgent, utcnow


class KeptAgent(NamedTuple):
    format: str
    content: bytes
    language: str = ""


def keep_agent(
    s: Session, project_id: int, format: str, content: bytes, language: str = ""
) -> str | None:
    """Keep ``content`` as the project's agent (one per project: it replaces the one kept before),
    read in ``language`` (``""``: the agent's default). Returns the format of the agent it
    replaced, or None."""
    row = s.get(ImportedAgent, project_id)
    before = None if row is None else row.format
    if row is None:
        row = ImportedAgent(project_id=project_id)
        s.add(row)
    row.format = format
    row.content = content
    row.language = language
    row.sha256 = hashlib.sha256(content).hexdigest()
    row.created_at = utcnow()
    s.flush()
    return before


def kept_agent(s: Session, project_id: int) -> KeptAgent | None:
    """The project's kept agent, or None."""
    row = s.get(ImportedAgent, project_id)
    return None if row is None else KeptAgent(row.format, row.content, row.language)


def forget_agent(s: Session, project_id: int) -> bool:
    """Drop the project's kept agent; whether there was one."""
    row = s.get(ImportedAgent, project_id)
    if row is not None:
        s.delete(row)
        s.flush()
    return row is not None
