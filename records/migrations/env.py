"""Alembic environment: always run with a connection handed over by records._store."""

from __future__ import annotations

from alembic import context

from records._models import Base

connection = context.config.attributes.get("connection")
if connection is None:  # pragma: no cover - holon always passes one
    raise RuntimeError("run migrations through `holon db upgrade`")

context.configure(
    connection=connection,
    target_metadata=Base.metadata,
    render_as_batch=connection.dialect.name == "sqlite",
    compare_type=True,
)
with context.begin_transaction():
    context.run_migrations()
