"""A stored holdout as a pool: its size and the epochs it holds, beside the subset an epoch grades

Revision ID: 0023
Revises: 0022
Create Date: 2026-12-05
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0023"
down_revision = "0022"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # NULL for every version installed before: none of them has a pool.
    with op.batch_alter_table("suite_versions") as batch:
        batch.add_column(sa.Column("holdout_pool_cases", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("holdout_pool_epochs", sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("suite_versions") as batch:
        batch.drop_column("holdout_pool_epochs")
        batch.drop_column("holdout_pool_cases")
