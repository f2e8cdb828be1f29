"""imported agents: the platform agent a project came from

``imported_agents``: one row per project imported from a Dialogflow, Lex, Watson, LUIS or CLU
export, holding that export's files as they were (a zip or one JSON file), so an export writes back
what the app does not model (responses, entities, flows, slots' prompts). Removed with its project.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-24 18:20:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "imported_agents",
        sa.Column("project_id", sa.Integer(), nullable=False),
        sa.Column("format", sa.String(length=40), nullable=False),
        sa.Column("content", sa.LargeBinary(), nullable=False),
        sa.Column("sha256", sa.String(length=64), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(["project_id"], ["projects.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("project_id"),
    )


def downgrade() -> None:
    op.drop_table("imported_agents")
