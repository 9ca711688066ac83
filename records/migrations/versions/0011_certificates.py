"""Certificates: signing keys, the issuer, certificates (issued and imported); the card an
A2A agent served; ledger rows name the certificate their mandate relied on

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from records._types import UTCDateTime

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "certificate_issuer",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("issuer", sa.String(200), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_certificate_issuer")),
    )
    op.create_table(
        "signing_keys",
        sa.Column("kid", sa.String(64), nullable=False),
        sa.Column("public_jwk", sa.JSON(), nullable=False),
        sa.Column("private_key", sa.LargeBinary(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("retired_at", UTCDateTime(), nullable=True),
        sa.PrimaryKeyConstraint("kid", name=op.f("pk_signing_keys")),
    )
    op.create_table(
        "certificates",
        sa.Column("id", sa.String(32), nullable=False),
        sa.Column("agent_id", sa.String(79), nullable=False),
        sa.Column("agent_version", sa.String(64), nullable=False),
        sa.Column("issuer", sa.String(200), nullable=False),
        sa.Column("imported", sa.Boolean(), nullable=False),
        sa.Column("eval_id", sa.String(32), nullable=False),
        sa.Column("subject_digest", sa.String(64), nullable=False),
        sa.Column("card_digest", sa.String(64), nullable=True),
        sa.Column("envelope", sa.JSON(), nullable=False),
        sa.Column("record", sa.JSON(), nullable=True),
        sa.Column("issued_at", UTCDateTime(), nullable=False),
        sa.Column("expires_at", UTCDateTime(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("revoked_at", UTCDateTime(), nullable=True),
        sa.Column("revoked_reason", sa.String(500), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_certificates")),
    )
    op.create_index(
        "ix_certificates_agent", "certificates", ["agent_id", "agent_version", "issued_at"]
    )
    with op.batch_alter_table("agent_identities") as batch:
        batch.add_column(sa.Column("card_digest", sa.String(64), nullable=True))
    with op.batch_alter_table("ledger") as batch:
        batch.add_column(sa.Column("certificate_id", sa.String(32), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("ledger") as batch:
        batch.drop_column("certificate_id")
    with op.batch_alter_table("agent_identities") as batch:
        batch.drop_column("card_digest")
    op.drop_index("ix_certificates_agent", table_name="certificates")
    op.drop_table("certificates")
    op.drop_table("signing_keys")
    op.drop_table("certificate_issuer")
