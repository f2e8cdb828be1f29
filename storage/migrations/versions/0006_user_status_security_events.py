"""user status and the security log

``users.status``: ``active``, ``locked`` or ``removed`` (a removed user's row stays, without
password or token, so label events keep their author); ``users.credentials_changed_at``: browser
sessions signed in before it have ended. ``security_events``: who removed, locked, unlocked or
reset whose password, and which sign-ins the rate limit held back.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-24 18:30:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("users", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("status", sa.String(length=16), nullable=False, server_default="active")
        )
        batch_op.add_column(sa.Column("credentials_changed_at", sa.DateTime(), nullable=True))
    op.create_table(
        "security_events",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("action", sa.String(length=32), nullable=False),
        sa.Column("user_name", sa.String(length=80), nullable=False),
        sa.Column("actor", sa.String(length=120), nullable=False),
        sa.Column("address", sa.String(length=64), nullable=False),
        sa.Column("detail", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )


def downgrade() -> None:
    op.drop_table("security_events")
    with op.batch_alter_table("users", schema=None) as batch_op:
        batch_op.drop_column("credentials_changed_at")
        batch_op.drop_column("status")
