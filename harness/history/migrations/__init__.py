"""Alembic migrations of the history index (env.py, versions/). Applied by `harness.history.db`."""
