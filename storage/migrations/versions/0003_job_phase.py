"""job phase: which part of a retrain the job's progress counts

A retrain's progress has two measured phases, ``training`` (steps) and ``evaluating`` (utterances
to encode), each with its own step, total and ETA; the other moments (``preparing``, ``saving``,
``registering``) carry no count. Existing rows get ``""`` (no phase recorded).

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-23 03:30:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("training_jobs", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("phase", sa.String(length=16), nullable=False, server_default="")
        )


def downgrade() -> None:
    with op.batch_alter_table("training_jobs", schema=None) as batch_op:
        batch_op.drop_column("phase")
