"""what a retrain's version measured and whether it serves, in one line

A retrain's checkpoint is measured and either serves or is kept back (issue 71 item 6):
``verdict`` is that line ("v9 (continuing v8 with 23 new labels) measured 88.6 % vs 88.3 %:
serves", "... kept back: 86.9 % < 88.3 %, v8 keeps serving"), which the Train tab, the Label
tab's line, the CLI and REST say while the job goes on. Existing rows have none.

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-28 17:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("training_jobs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("verdict", sa.Text(), nullable=False, server_default=""))


def downgrade() -> None:
    with op.batch_alter_table("training_jobs", schema=None) as batch_op:
        batch_op.drop_column("verdict")
