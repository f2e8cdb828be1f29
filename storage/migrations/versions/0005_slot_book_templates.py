"""slot book and templates (TaDSE), entity annotations on utterances

A project's slot book is one ``slot_values`` row per (slot, value); an intent's templates are
``templates`` rows (text with ``{slot}`` placeholders), removed with their intent. Utterances get
``entities``: the entity annotation spans of their text (``[]`` for existing rows), so a Rasa
import keeps what it used to flatten.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-23 09:30:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "slot_values",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("project_id", sa.Integer(), nullable=False),
        sa.Column("slot", sa.String(length=80), nullable=False),
        sa.Column("value", sa.String(length=200), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(["project_id"], ["projects.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("project_id", "slot", "value", name="uq_slot_value"),
    )
    with op.batch_alter_table("slot_values", schema=None) as batch_op:
        batch_op.create_index("ix_slot_value_project", ["project_id", "slot"], unique=False)
    op.create_table(
        "templates",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("intent_id", sa.Integer(), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(["intent_id"], ["intents.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("intent_id", "text", name="uq_template_intent_text"),
    )
    with op.batch_alter_table("templates", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_templates_intent_id"), ["intent_id"], unique=False)
    # ALTER TABLE ADD COLUMN, never batch mode's copy-and-drop: dropping ``utterances`` with
    # foreign keys on would cascade to (delete) every label.
    op.add_column(
        "utterances",
        sa.Column("entities", sa.JSON(), nullable=False, server_default=sa.text("'[]'")),
    )


def downgrade() -> None:
    with op.batch_alter_table("utterances", schema=None) as batch_op:
        batch_op.drop_column("entities")
    with op.batch_alter_table("templates", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_templates_intent_id"))
    op.drop_table("templates")
    with op.batch_alter_table("slot_values", schema=None) as batch_op:
        batch_op.drop_index("ix_slot_value_project")
    op.drop_table("slot_values")
