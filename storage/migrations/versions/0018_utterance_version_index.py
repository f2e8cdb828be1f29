"""utterances by project and version: the pool stamp read from an index

Every prediction and every key of the Label tab reads a project's pool stamp
(:func:`storage.pool_state.pool_stamp`): the count of its utterances and the sum of their
versions. The sum read every row of the project from the table (42 ms at 60,000 rows, about
170 ms at 250,000, twice per key, under load 13); with this index both are read from it alone
(14 ms at 60,000) (issue 72: a log dump of 250,000 rows).

Revision ID: 0018
Revises: 0017
Create Date: 2026-11-28 18:40:00
"""

from __future__ import annotations

from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("utterances", schema=None) as batch_op:
        batch_op.create_index(
            "ix_utterance_project_version", ["project_id", "version"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("utterances", schema=None) as batch_op:
        batch_op.drop_index("ix_utterance_project_version")
