"""job progress: the whole retrain's share done, one bar that never goes back

A retrain's progress was each measured phase's own count (training steps, then utterances to
encode), so the bar restarted at every phase (99 → 2 → 64 %). ``progress`` is the whole job's
share done, from 0 to 1, written by the worker as a weighted sum of its phases
(:mod:`app.services.training.job_plan`) and only ever raised. Existing rows get 0: an ended job shows by
its status (a succeeded one 100 %).

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-26 15:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("training_jobs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("progress", sa.Float(), nullable=False, server_default="0"))


def downgrade() -> None:
    with op.batch_alter_table("training_jobs", schema=None) as batch_op:
        batch_op.drop_column("progress")
