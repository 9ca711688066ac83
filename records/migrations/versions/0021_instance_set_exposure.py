"""Exposure is the holdout's: every org's holdout-revealing evals per instance set

Revision ID: 0021
Revises: 0020
Create Date: 2026-12-05
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from records._types import UTCDateTime

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "instance_set_exposure",
        sa.Column("suite_id", sa.String(63), nullable=False),
        sa.Column("instance_set", sa.String(64), nullable=False),
        sa.Column("label", sa.String(120), nullable=False),
        sa.Column("revealed", sa.Integer(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("suite_id", "instance_set", name=op.f("pk_instance_set_exposure")),
    )
    # Every reveal an org already had counts for its instance set: the gate's k and
    # the instance set's budget start from what was shown, not from zero.
    op.execute(
        "INSERT INTO instance_set_exposure (suite_id, instance_set, label, revealed, updated_at) "
        "SELECT suite_id, instance_set, MIN(label), SUM(revealed), MAX(updated_at) "
        "FROM holdout_exposure GROUP BY suite_id, instance_set"
    )


def downgrade() -> None:
    op.drop_table("instance_set_exposure")
