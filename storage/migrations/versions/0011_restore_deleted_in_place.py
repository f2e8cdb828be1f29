"""an undone delete brings the utterance back under its own id

``label_events.gone_id``: the id of the utterance an event is about, kept while that utterance is
deleted (its ``utterance_id`` is then NULL: the foreign key sets it so); an undo of the delete
puts the utterance back under that id and links its history to it again.
``label_events.kept``: on a ``delete`` event, what the deleted row held besides its text, intents
and split (its context, entity spans and creation time), so the undo restores the same row.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-02 10:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("label_events", sa.Column("gone_id", sa.Integer(), nullable=True))
    op.add_column("label_events", sa.Column("kept", sa.JSON(), nullable=True))
    op.create_index("ix_label_event_gone", "label_events", ["project_id", "gone_id"])


def downgrade() -> None:
    op.drop_index("ix_label_event_gone", table_name="label_events")
    with op.batch_alter_table("label_events") as batch:
        batch.drop_column("kept")
        batch.drop_column("gone_id")
