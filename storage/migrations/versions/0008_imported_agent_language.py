"""imported agents: the language read

``imported_agents.language``: the language (Lex: the locale) a project was imported in from its
agent, ``""`` for the agent's default, so that an export writes the phrases back into that
language and leaves the others as they are.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-24 18:50:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # ALTER TABLE ADD COLUMN, not batch mode's copy-and-drop (a default fills the rows there).
    op.add_column(
        "imported_agents",
        sa.Column("language", sa.String(length=35), nullable=False, server_default=""),
    )


def downgrade() -> None:
    with op.batch_alter_table("imported_agents", schema=None) as batch_op:
        batch_op.drop_column("language")
