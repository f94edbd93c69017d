"""Alembic's environment for the history store: always run by `Database.migrate()` with the
connection it hands over (no alembic.ini, no URL here)."""

from __future__ import annotations

from alembic import context

from stream_worker.store.schema import metadata

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=metadata, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
