"""Holdout integrity: exposure budgets, epochs by time, records that follow registrations

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from records._types import UTCDateTime

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "holdout_exposure",
        sa.Column("org", sa.String(39), nullable=False),
        sa.Column("suite_id", sa.String(63), nullable=False),
        sa.Column("instance_set", sa.String(64), nullable=False),
        sa.Column("label", sa.String(120), nullable=False),
        sa.Column("spent", sa.Integer(), nullable=False),
        sa.Column("revealed", sa.Integer(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint(
            "org", "suite_id", "instance_set", name=op.f("pk_holdout_exposure")
        ),
    )
    op.create_table(
        "exposure_resets",
        sa.Column("id", sa.String(32), nullable=False),
        sa.Column("org", sa.String(39), nullable=False),
        sa.Column("suite_id", sa.String(63), nullable=False),
        sa.Column("instance_set", sa.String(64), nullable=False),
        sa.Column("spent_before", sa.Integer(), nullable=False),
        sa.Column("reset_by", sa.String(120), nullable=False),
        sa.Column("reason", sa.String(500), nullable=False),
        sa.Column("at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_exposure_resets")),
    )
    with op.batch_alter_table("suite_versions") as batch:
        batch.add_column(sa.Column("epoch_started_at", UTCDateTime(), nullable=True))
    with op.batch_alter_table("agents") as batch:
        # When the current version last became current; NULL on stores older
        # than this revision means "when that version was first registered".
        batch.add_column(sa.Column("current_since", UTCDateTime(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("agents") as batch:
        batch.drop_column("current_since")
    with op.batch_alter_table("suite_versions") as batch:
        batch.drop_column("epoch_started_at")
    op.drop_table("exposure_resets")
    op.drop_table("holdout_exposure")
