"""slot value synonyms: what an entity value is also written as, so entity types travel

A slot's value is what an annotation normalises to (Dialogflow's entity entry, a Rasa
``synonym:`` map, a LUIS closed list's canonical form, a CLU list key, a Watson entity value, a
Lex slot type value); ``synonyms`` holds the other ways it is written (``["credit card",
"card"]`` for ``credit``), so a project moved between platforms keeps its entity types whole
(issue 66). Existing values get ``[]``.

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-27 23:40:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # ALTER TABLE ADD COLUMN (as 0005 adds utterances.entities), not batch mode's table copy.
    op.add_column(
        "slot_values",
        sa.Column("synonyms", sa.JSON(), nullable=False, server_default=sa.text("'[]'")),
    )


def downgrade() -> None:
    with op.batch_alter_table("slot_values", schema=None) as batch_op:
        batch_op.drop_column("synonyms")
