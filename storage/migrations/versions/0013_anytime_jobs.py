"""anytime and automatic retrains: what a job serves while it improves, and what started it

A retrain serves a first version from its first pass and goes on improving it (issue 63):
``served_step`` is the training step of the checkpoint its version serves now (None before the
first one serves), of ``train_steps`` planned. ``trigger`` says who asked for the job: ``manual`` (a click, REST, the CLI)
or ``auto`` (the worker, after enough new labels and a quiet spell). ``label_mark`` is the
project's newest label event when the job read its data: labels after it make the next
automatic retrain. Existing rows are manual jobs with no mark.

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-27 23:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("training_jobs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("served_step", sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column("train_steps", sa.Integer(), nullable=True))
        batch_op.add_column(
            sa.Column("trigger", sa.String(16), nullable=False, server_default="manual")
        )
        batch_op.add_column(sa.Column("label_mark", sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("training_jobs", schema=None) as batch_op:
        batch_op.drop_column("label_mark")
        batch_op.drop_column("trigger")
        batch_op.drop_column("train_steps")
        batch_op.drop_column("served_step")
