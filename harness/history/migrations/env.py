"""Alembic's environment for the history index: always online, on the connection it is given.

`harness.history.db.migrate` passes its open connection in `config.attributes["connection"]`, so
migrations run in the same transaction and with the same settings as everything else. To write a
new revision, change `harness/history/schema.py`, then (from the repository root):

    .venv/bin/python -m harness.history.migrations.new "what changed"

and edit the generated file under versions/ (and `schema.HEAD`).
"""

from __future__ import annotations

from alembic import context

from harness.history.schema import metadata

connection = context.config.attributes["connection"]
context.configure(
    connection=connection,
    target_metadata=metadata,
    render_as_batch=True,
    compare_type=True,
    compare_server_default=False,
)
with context.begin_transaction():
    context.run_migrations()
