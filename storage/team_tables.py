"""What a team adds to a project's data: who belongs to which project with what role, which
utterances each annotator is given and what each answered, and the log of what happened to the
accounts.

These change with how people work together (roles, overlap labelling, account security), not
with what a project holds. The accounts themselves (:class:`storage.tables.User`) stay with the
project's tables, whose label events and jobs name who made them. The queries over these are
:mod:`storage.members`, :mod:`storage.team` and :mod:`storage.users`.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, DateTime, ForeignKey, Index, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from storage.tables import Base, utcnow


class SecurityEvent(Base):
    """Append-only log of what happened to accounts: removed, locked, unlocked, a password
    reset, sign-ins held back by the rate limit. ``actor`` is who did it (``cli:<os user>`` for
    the command line), ``address`` where a sign-in came from."""

    __tablename__ = "security_events"

    id: Mapped[int] = mapped_column(primary_key=True)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    action: Mapped[str] = mapped_column(String(32))
    user_name: Mapped[str] = mapped_column(String(80), default="")
    actor: Mapped[str] = mapped_column(String(120), default="")
    address: Mapped[str] = mapped_column(String(64), default="")
    detail: Mapped[str] = mapped_column(Text, default="")


class Assignment(Base):
    """An utterance given to an annotator to label. Two or more annotators on one utterance make
    it an overlap item: its accepted label waits for their agreement or a reviewer."""

    __tablename__ = "assignments"
    __table_args__ = (
        UniqueConstraint("utterance_id", "user_id"),
        Index("ix_assignments_project_user", "project_id", "user_id"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"))
    utterance_id: Mapped[int] = mapped_column(ForeignKey("utterances.id", ondelete="CASCADE"))
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class ProjectMember(Base):
    """A user's membership of a project, with their role there (``viewer`` or ``designer``, never
    above the user's own role). Admins see and change every project without one; anyone else
    sees only the projects they are a member of."""

    __tablename__ = "project_members"
    __table_args__ = (UniqueConstraint("project_id", "user_id", name="uq_project_member"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"))
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    role: Mapped[str] = mapped_column(String(16))
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)


class Answer(Base):
    """One annotator's answer for an utterance (``label`` with intents, ``oos``, ``skip``), kept
    apart from its accepted label (:class:`storage.tables.Label`), which training, evaluation and
    export use."""

    __tablename__ = "answers"
    __table_args__ = (
        UniqueConstraint("utterance_id", "user_id"),
        Index("ix_answers_project", "project_id"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"))
    utterance_id: Mapped[int] = mapped_column(ForeignKey("utterances.id", ondelete="CASCADE"))
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    action: Mapped[str] = mapped_column(String(8))
    intents: Mapped[list[str]] = mapped_column(JSON, default=list)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow, onupdate=utcnow)
