"""The A2A front door's tasks (a2a_tasks), shared by every process of a gateway

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from records._types import UTCDateTime

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "a2a_tasks",
        sa.Column("id", sa.String(36), nullable=False),
        sa.Column("caller", sa.String(200), nullable=False),
        sa.Column("door", sa.String(300), nullable=False),
        sa.Column("state", sa.String(40), nullable=False),
        sa.Column("task", sa.JSON(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_a2a_tasks")),
    )
    op.create_index(op.f("ix_a2a_tasks_caller"), "a2a_tasks", ["caller"])


def downgrade() -> None:
    op.drop_index(op.f("ix_a2a_tasks_caller"), table_name="a2a_tasks")
    op.drop_table("a2a_tasks")
