"""Identity probes that act: what the last probe of each agent version found

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from records._types import UTCDateTime

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "agent_identities",
        sa.Column("agent_id", sa.String(79), nullable=False),
        sa.Column("agent_version", sa.String(64), nullable=False),
        sa.Column("probed_at", UTCDateTime(), nullable=False),
        sa.Column("answered_id", sa.String(120), nullable=False),
        sa.Column("answered_version", sa.String(120), nullable=False),
        sa.Column("not_advertised", sa.JSON(), nullable=False),
        sa.Column("mismatch_at", UTCDateTime(), nullable=True),
        sa.Column("mismatch_reason", sa.String(500), nullable=True),
        sa.ForeignKeyConstraint(
            ["agent_id"], ["agents.id"], name=op.f("fk_agent_identities_agent_id_agents")
        ),
        sa.PrimaryKeyConstraint("agent_id", "agent_version", name=op.f("pk_agent_identities")),
    )


def downgrade() -> None:
    op.drop_table("agent_identities")
