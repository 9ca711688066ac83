"""Live contract: per agent, capability and day, live answers and contract violations

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "live_conformance",
        sa.Column("agent_id", sa.String(79), nullable=False),
        sa.Column("capability", sa.String(100), nullable=False),
        sa.Column("day", sa.String(10), nullable=False),
        sa.Column("calls", sa.Integer(), nullable=False),
        sa.Column("violations", sa.Integer(), nullable=False),
        sa.Column("input_violations", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("agent_id", "capability", "day", name=op.f("pk_live_conformance")),
    )


def downgrade() -> None:
    op.drop_table("live_conformance")
