"""eval runs, their cells, and agent records

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from records._types import UTCDateTime

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "evals",
        sa.Column("id", sa.String(32), nullable=False),
        sa.Column("agent_id", sa.String(79), nullable=False),
        sa.Column("agent_version", sa.String(64), nullable=False),
        sa.Column("plan", sa.JSON(), nullable=False),
        sa.Column("plan_digest", sa.String(64), nullable=False),
        sa.Column("full_plan", sa.Boolean(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("cells_total", sa.Integer(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("finished_at", UTCDateTime(), nullable=True),
        sa.Column("result", sa.JSON(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_evals")),
    )
    op.create_index(op.f("ix_evals_agent_id"), "evals", ["agent_id"])
    op.create_table(
        "eval_cells",
        sa.Column("eval_id", sa.String(32), nullable=False),
        sa.Column("idx", sa.Integer(), nullable=False),
        sa.Column("suite_id", sa.String(63), nullable=False),
        sa.Column("suite_version", sa.Integer(), nullable=False),
        sa.Column("split", sa.String(8), nullable=False),
        sa.Column("case_id", sa.String(100), nullable=False),
        sa.Column("case_digest", sa.String(64), nullable=False),
        sa.Column("repetition", sa.Integer(), nullable=False),
        sa.Column("tags", sa.JSON(), nullable=False),
        sa.Column("request_id", sa.String(36), nullable=False),
        sa.Column("status", sa.String(8), nullable=False),
        sa.Column("lease_owner", sa.String(128), nullable=True),
        sa.Column("lease_expires_at", UTCDateTime(), nullable=True),
        sa.Column("fence", sa.Integer(), nullable=False),
        sa.Column("outcome_code", sa.String(20), nullable=True),
        sa.Column("passed", sa.Boolean(), nullable=True),
        sa.Column("cost_usd", sa.String(40), nullable=True),
        sa.Column("latency_ms", sa.Float(), nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("outcome", sa.JSON(), nullable=True),
        sa.Column("output", sa.JSON(), nullable=True),
        sa.Column("checks", sa.JSON(), nullable=True),
        sa.Column("recorded_by", sa.String(128), nullable=True),
        sa.Column("finished_at", UTCDateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ["eval_id"], ["evals.id"], name=op.f("fk_eval_cells_eval_id_evals")
        ),
        sa.PrimaryKeyConstraint("eval_id", "idx", name=op.f("pk_eval_cells")),
    )
    op.create_index("ix_eval_cells_claim", "eval_cells", ["eval_id", "status", "idx"])
    op.create_table(
        "agent_records",
        sa.Column("eval_id", sa.String(32), nullable=False),
        sa.Column("agent_id", sa.String(79), nullable=False),
        sa.Column("agent_version", sa.String(64), nullable=False),
        sa.Column("eval_created_at", UTCDateTime(), nullable=False),
        sa.Column("record", sa.JSON(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["eval_id"], ["evals.id"], name=op.f("fk_agent_records_eval_id_evals")
        ),
        sa.PrimaryKeyConstraint("eval_id", name=op.f("pk_agent_records")),
    )
    op.create_index(
        "ix_agent_records_lookup", "agent_records", ["agent_id", "agent_version", "eval_created_at"]
    )


def downgrade() -> None:
    op.drop_index("ix_agent_records_lookup", table_name="agent_records")
    op.drop_table("agent_records")
    op.drop_index("ix_eval_cells_claim", table_name="eval_cells")
    op.drop_table("eval_cells")
    op.drop_index(op.f("ix_evals_agent_id"), table_name="evals")
    op.drop_table("evals")
