"""installed suites, their versions, and the store's own secrets

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from records._types import UTCDateTime

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "suites",
        sa.Column("id", sa.String(63), nullable=False),
        sa.Column("active_version", sa.Integer(), nullable=True),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_suites")),
    )
    op.create_table(
        "suite_versions",
        sa.Column("suite_id", sa.String(63), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("capability", sa.String(100), nullable=False),
        sa.Column("title", sa.String(200), nullable=False),
        sa.Column("suite_digest", sa.String(64), nullable=False),
        sa.Column("digests", sa.JSON(), nullable=False),
        sa.Column("files", sa.JSON(), nullable=False),
        sa.Column("public_cases", sa.Integer(), nullable=False),
        sa.Column("holdout_cases", sa.Integer(), nullable=False),
        sa.Column("holdout_kind", sa.String(16), nullable=False),
        sa.Column("grace_days", sa.Integer(), nullable=False),
        sa.Column("holdout_epoch", sa.Integer(), nullable=False),
        sa.Column("evals_in_epoch", sa.Integer(), nullable=False),
        sa.Column("installed_at", UTCDateTime(), nullable=False),
        sa.Column("activated_at", UTCDateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ["suite_id"], ["suites.id"], name=op.f("fk_suite_versions_suite_id_suites")
        ),
        sa.PrimaryKeyConstraint("suite_id", "version", name=op.f("pk_suite_versions")),
    )
    op.create_index(op.f("ix_suite_versions_capability"), "suite_versions", ["capability"])
    op.create_table(
        "store_secrets",
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column("value", sa.LargeBinary(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_store_secrets")),
    )


def downgrade() -> None:
    op.drop_table("store_secrets")
    op.drop_index(op.f("ix_suite_versions_capability"), table_name="suite_versions")
    op.drop_table("suite_versions")
    op.drop_table("suites")
