"""project members: who sees and changes which project, with a role there

``project_members``: a user's membership of a project with their role in it (never above the
user's own role). Admins need none. Every user who could see every project before (every
active or locked viewer and designer) becomes a member of every existing project with their
role, so an upgraded deployment works as it did; projects created later start with no members.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-26 13:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "project_members",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("project_id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("role", sa.String(length=16), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(["project_id"], ["projects.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("project_id", "user_id", name="uq_project_member"),
    )
    op.create_index("ix_project_members_user_id", "project_members", ["user_id"])
    op.execute(
        "INSERT INTO project_members (project_id, user_id, role, created_at) "
        "SELECT p.id, u.id, u.role, CURRENT_TIMESTAMP FROM projects p CROSS JOIN users u "
        "WHERE u.role IN ('viewer', 'designer') AND u.status != 'removed'"
    )


def downgrade() -> None:
    op.drop_index("ix_project_members_user_id", table_name="project_members")
    op.drop_table("project_members")
