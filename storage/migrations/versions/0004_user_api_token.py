"""user api token: the sha256 of each user's REST API token

``intent-studio users token NAME`` prints a new token once; only its hash is stored, so a copy of
the database gives nobody a usable token. A user has at most one token (a new one replaces it);
null = none. Unique, so a request's token names one user.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-23 06:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("users", schema=None) as batch_op:
        batch_op.add_column(sa.Column("api_token_hash", sa.String(length=64), nullable=True))
        batch_op.create_index("ix_users_api_token_hash", ["api_token_hash"], unique=True)


def downgrade() -> None:
    with op.batch_alter_table("users", schema=None) as batch_op:
        batch_op.drop_index("ix_users_api_token_hash")
        batch_op.drop_column("api_token_hash")
