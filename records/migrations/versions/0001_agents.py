"""agents, their versions and secrets

Revision ID: 0001
Revises:
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from records._types import UTCDateTime

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "agents",
        sa.Column("id", sa.String(79), nullable=False),
        sa.Column("org", sa.String(39), nullable=False),
        sa.Column("current_version", sa.String(64), nullable=False),
        sa.Column("disabled", sa.Boolean(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_agents")),
    )
    op.create_index(op.f("ix_agents_org"), "agents", ["org"])
    op.create_table(
        "agent_versions",
        sa.Column("agent_id", sa.String(79), nullable=False),
        sa.Column("version", sa.String(64), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("manifest", sa.JSON(), nullable=False),
        sa.Column("manifest_digest", sa.String(64), nullable=False),
        sa.Column("registered_at", UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["agent_id"], ["agents.id"], name=op.f("fk_agent_versions_agent_id_agents")
        ),
        sa.PrimaryKeyConstraint("agent_id", "version", name=op.f("pk_agent_versions")),
        sa.UniqueConstraint("agent_id", "seq", name=op.f("uq_agent_versions_agent_id")),
    )
    op.create_table(
        "agent_secrets",
        sa.Column("agent_id", sa.String(79), nullable=False),
        sa.Column("ciphertext", sa.LargeBinary(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["agent_id"], ["agents.id"], name=op.f("fk_agent_secrets_agent_id_agents")
        ),
        sa.PrimaryKeyConstraint("agent_id", name=op.f("pk_agent_secrets")),
    )


def downgrade() -> None:
    op.drop_table("agent_secrets")
    op.drop_table("agent_versions")
    op.drop_index(op.f("ix_agents_org"), table_name="agents")
    op.drop_table("agents")
