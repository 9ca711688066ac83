"""What older code the schema still serves: the rolling upgrade's marker

Revision ID: 0024
Revises: 0023
Create Date: 2026-12-05
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0024"
down_revision = "0023"
branch_labels = None
depends_on = None
# Every migration from this one on says which holon schema revision's code still runs on
# the schema it leaves (docs/deploy.md, "Upgrades"): its down_revision's for a migration
# that only adds (a table, a nullable or defaulted column, an index), its own for one
# that changes or removes what older code reads or writes. This one only adds a table
# that older code never touches.
serves_from = "0023"


def upgrade() -> None:
    op.create_table(
        "schema_compat",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("serves_from", sa.String(32), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_schema_compat")),
    )
    op.execute("INSERT INTO schema_compat (id, serves_from) VALUES (1, '0024')")


def downgrade() -> None:
    op.drop_table("schema_compat")
