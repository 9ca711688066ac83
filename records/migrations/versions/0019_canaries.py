"""Canaries: the runs graded inside live traffic, and the drift test per agent version;
live answers that fail a reference-free check, counted in live conformance

Revision ID: 0019
Revises: 0018
Create Date: 2026-12-05
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from records._types import UTCDateTime

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("live_conformance") as batch:
        batch.add_column(
            sa.Column("check_failures", sa.Integer(), nullable=False, server_default="0")
        )
    op.create_table(
        "canary_runs",
        sa.Column("id", sa.String(36), nullable=False),
        sa.Column("agent_id", sa.String(79), nullable=False),
        sa.Column("agent_version", sa.String(64), nullable=False),
        sa.Column("capability", sa.String(100), nullable=False),
        sa.Column("record_eval_id", sa.String(32), nullable=False),
        sa.Column("suite_id", sa.String(100), nullable=False),
        sa.Column("suite_version", sa.Integer(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("outcome_code", sa.String(20), nullable=False),
        sa.Column("passed", sa.Boolean(), nullable=False),
        sa.Column("cost_usd", sa.String(40), nullable=False),
        sa.Column("latency_ms", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_canary_runs")),
    )
    op.create_index("ix_canary_runs_agent_at", "canary_runs", ["agent_id", "created_at"])
    op.create_index(
        "ix_canary_runs_record",
        "canary_runs",
        ["agent_id", "agent_version", "capability", "created_at"],
    )
    op.create_table(
        "canary_states",
        sa.Column("agent_id", sa.String(79), nullable=False),
        sa.Column("agent_version", sa.String(64), nullable=False),
        sa.Column("capability", sa.String(100), nullable=False),
        sa.Column("record_eval_id", sa.String(32), nullable=False),
        sa.Column("graded", sa.Integer(), nullable=False),
        sa.Column("passed", sa.Integer(), nullable=False),
        sa.Column("state", sa.JSON(), nullable=False),
        sa.Column("drifted_at", UTCDateTime(), nullable=True),
        sa.Column("drift", sa.JSON(), nullable=True),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint(
            "agent_id", "agent_version", "capability", name=op.f("pk_canary_states")
        ),
    )


def downgrade() -> None:
    op.drop_table("canary_states")
    op.drop_index("ix_canary_runs_record", table_name="canary_runs")
    op.drop_index("ix_canary_runs_agent_at", table_name="canary_runs")
    op.drop_table("canary_runs")
    with op.batch_alter_table("live_conformance") as batch:
        batch.drop_column("check_failures")
