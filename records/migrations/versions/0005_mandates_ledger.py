"""Mandates, budgets and the billing ledger

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from records._types import UTCDateTime

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "mandates",
        sa.Column("id", sa.String(64), nullable=False),
        sa.Column("holder", sa.String(64), nullable=False),
        sa.Column("document", sa.JSON(), nullable=False),
        sa.Column("digest", sa.String(64), nullable=False),
        sa.Column("revision", sa.Integer(), nullable=False),
        sa.Column("granted_at", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.Column("revoked_at", UTCDateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_mandates")),
    )
    op.create_index(op.f("ix_mandates_holder"), "mandates", ["holder"])
    op.create_table(
        "budgets",
        sa.Column("mandate_id", sa.String(64), nullable=False),
        sa.Column("period", sa.String(16), nullable=False),
        sa.Column("spent_usd", sa.String(40), nullable=False),
        sa.Column("reserved_usd", sa.String(40), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("mandate_id", "period", name=op.f("pk_budgets")),
    )
    op.create_table(
        "ledger",
        sa.Column("id", sa.String(32), nullable=False),
        sa.Column("request_id", sa.String(36), nullable=False),
        sa.Column("caller", sa.String(64), nullable=False),
        sa.Column("mandate_id", sa.String(64), nullable=True),
        sa.Column("period", sa.String(16), nullable=True),
        sa.Column("agent_id", sa.String(79), nullable=True),
        sa.Column("agent_version", sa.String(64), nullable=True),
        sa.Column("capability", sa.String(100), nullable=False),
        sa.Column("decision", sa.String(8), nullable=False),
        sa.Column("reason", sa.String(40), nullable=True),
        sa.Column("details", sa.JSON(), nullable=False),
        sa.Column("status", sa.String(10), nullable=False),
        sa.Column("reserved_usd", sa.String(40), nullable=False),
        sa.Column("cost_usd", sa.String(40), nullable=False),
        sa.Column("cost_source", sa.String(10), nullable=True),
        sa.Column("outcome_code", sa.String(20), nullable=True),
        sa.Column("latency_ms", sa.Float(), nullable=True),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("expires_at", UTCDateTime(), nullable=True),
        sa.Column("settled_at", UTCDateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_ledger")),
        sa.UniqueConstraint("request_id", name=op.f("uq_ledger_request_id")),
    )
    op.create_index("ix_ledger_caller", "ledger", ["caller", "id"])
    op.create_index("ix_ledger_reserved", "ledger", ["status", "expires_at"])
    op.create_index(op.f("ix_ledger_mandate_id"), "ledger", ["mandate_id"])
    op.create_index(op.f("ix_ledger_agent_id"), "ledger", ["agent_id"])


def downgrade() -> None:
    op.drop_table("ledger")
    op.drop_table("budgets")
    op.drop_index(op.f("ix_mandates_holder"), table_name="mandates")
    op.drop_table("mandates")
