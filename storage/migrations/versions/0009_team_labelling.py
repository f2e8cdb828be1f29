"""team labelling: assignments and each annotator's answers

``assignments``: an utterance given to an annotator (two or more on one utterance: an overlap
item, labelled twice). ``answers``: each annotator's answer (``label`` with its intents,
``oos``, ``skip``), apart from the utterance's accepted label. Both go with their project,
utterance or user.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-25 12:40:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.schema import SchemaItem

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def _owned() -> list[SchemaItem]:
    return [
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("project_id", sa.Integer(), nullable=False),
        sa.Column("utterance_id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["project_id"], ["projects.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["utterance_id"], ["utterances.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("utterance_id", "user_id"),
    ]


def upgrade() -> None:
    op.create_table(
        "assignments",
        *_owned(),
        sa.Column("created_at", sa.DateTime(), nullable=False),
    )
    op.create_index("ix_assignments_project_user", "assignments", ["project_id", "user_id"])
    op.create_table(
        "answers",
        *_owned(),
        sa.Column("action", sa.String(length=8), nullable=False),
        sa.Column("intents", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
    )
    op.create_index("ix_answers_project", "answers", ["project_id"])


def downgrade() -> None:
    op.drop_index("ix_answers_project", table_name="answers")
    op.drop_table("answers")
    op.drop_index("ix_assignments_project_user", table_name="assignments")
    op.drop_table("assignments")
