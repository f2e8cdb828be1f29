"""label event indexes: by utterance and by batch

Deleting utterances (an undone import of thousands) sets their events' utterance_id to NULL:
without an index SQLite scans the whole audit log once per deleted row. Undo and the Activity
tab read events by batch.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22 16:40:00
"""

from __future__ import annotations

from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("label_events", schema=None) as batch_op:
        batch_op.create_index("ix_label_event_utterance", ["utterance_id"], unique=False)
        batch_op.create_index("ix_label_event_batch", ["project_id", "batch"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("label_events", schema=None) as batch_op:
        batch_op.drop_index("ix_label_event_batch")
        batch_op.drop_index("ix_label_event_utterance")
