"""retrains that start when they can pay: what the served model said, and when someone worked

An automatic retrain counts what can change the model (issue 71 item 2): a label the model that
served decided otherwise counts twice, so ``label_events.served`` keeps that decision (intent
names; ``[]`` out of scope) where the label answered a card that showed it (the Label tab), else
NULL. Its quiet spell counts from the last key or card of the Label tab, which a worker on
another machine reads in ``project_activity`` (one row per project, the time on the database's
clock). Existing events: not known; no project has worked yet.

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-28 16:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # ALTER TABLE ADD COLUMN (as 0014), not batch mode's table copy of the audit log
    op.add_column("label_events", sa.Column("served", sa.JSON(), nullable=True))
    op.create_table(
        "project_activity",
        sa.Column(
            "project_id",
            sa.Integer(),
            sa.ForeignKey("projects.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("active_at", sa.DateTime(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("project_activity")
    with op.batch_alter_table("label_events", schema=None) as batch_op:
        batch_op.drop_column("served")
