"""Web console sessions: a signed-in browser's cookie, stored as its hash

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from records._types import UTCDateTime

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "console_sessions",
        sa.Column("id", sa.String(64), nullable=False),
        sa.Column("token_id", sa.String(32), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("expires_at", UTCDateTime(), nullable=False),
        sa.Column("ended_at", UTCDateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ["token_id"], ["tokens.id"], name=op.f("fk_console_sessions_token_id_tokens")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_console_sessions")),
    )
    op.create_index(
        op.f("ix_console_sessions_token_id"), "console_sessions", ["token_id"], unique=False
    )


def downgrade() -> None:
    op.drop_index(op.f("ix_console_sessions_token_id"), table_name="console_sessions")
    op.drop_table("console_sessions")
