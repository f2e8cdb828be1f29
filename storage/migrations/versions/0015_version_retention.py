"""version retention: what keeps a version's files, and which versions have none

Every version kept a full copy of its model, and nothing was ever deleted (issue 71 item 4,
issue 73 item 5: 0.9 GB in 10 minutes of automatic retrains). The retention rule
(:mod:`app.services.models.retention`) keeps the files of the active version, the newest few,
and every version someone pinned, activated or exported; it reads ``pinned``,
``activated_at`` and ``exported_at``. ``files_removed`` says why a version has no files any
more (the row stays in the history); ``int8_size`` is its own int8 copy's bytes, so the disk a
project's versions use is counted. Existing rows: not pinned, never activated or exported by a
person, their files kept, their int8 copy not measured yet.

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-28 14:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None

COLUMNS = ("pinned", "activated_at", "exported_at", "files_removed", "int8_size")


def upgrade() -> None:
    # ALTER TABLE ADD COLUMN (as 0014), not batch mode's table copy.
    op.add_column(
        "model_versions",
        sa.Column("pinned", sa.Boolean(), nullable=False, server_default=sa.false()),
    )
    op.add_column("model_versions", sa.Column("activated_at", sa.DateTime(), nullable=True))
    op.add_column("model_versions", sa.Column("exported_at", sa.DateTime(), nullable=True))
    op.add_column("model_versions", sa.Column("files_removed", sa.String(200), nullable=True))
    op.add_column("model_versions", sa.Column("int8_size", sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("model_versions", schema=None) as batch_op:
        for name in reversed(COLUMNS):
            batch_op.drop_column(name)
