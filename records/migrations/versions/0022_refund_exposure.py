"""Each eval's holdout exposure units, kept so that an eval that revealed nothing is refunded

Revision ID: 0022
Revises: 0021
Create Date: 2026-12-05
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from records._types import UTCDateTime

revision = "0022"
down_revision = "0021"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Evals created before this table have no units in it, so none of them is ever
    # refunded: what they spent stays spent, the side that cannot over-refund.
    op.create_table(
        "eval_exposure",
        sa.Column("eval_id", sa.String(32), nullable=False),
        sa.Column("suite_id", sa.String(63), nullable=False),
        sa.Column("instance_set", sa.String(64), nullable=False),
        sa.Column("org", sa.String(39), nullable=False),
        sa.Column("forgiven", sa.Boolean(), nullable=False),
        sa.Column("refunded_at", UTCDateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ["eval_id"], ["evals.id"], name=op.f("fk_eval_exposure_eval_id_evals")
        ),
        sa.PrimaryKeyConstraint(
            "eval_id", "suite_id", "instance_set", name=op.f("pk_eval_exposure")
        ),
    )
    op.create_index("ix_eval_exposure_spend", "eval_exposure", ["suite_id", "instance_set", "org"])


def downgrade() -> None:
    op.drop_index("ix_eval_exposure_spend", table_name="eval_exposure")
    op.drop_table("eval_exposure")
