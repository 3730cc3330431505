"""Regrades, tampering, grader version (issue 9's records): a regraded run names the run it
re-graded; each attempt keeps its grade's suspected tampering and grader version. Rows indexed
before this revision have them empty (NULL) until `history --add RUN` or `--rebuild` re-reads them.

Revision ID: 0002
Revises: 0001
Created: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("attempts", schema=None) as batch_op:
        batch_op.add_column(sa.Column("tampering", sa.Text(), nullable=True))
        batch_op.add_column(sa.Column("grader_version", sa.Integer(), nullable=True))

    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("regraded_from", sa.String(length=64), nullable=True))
        batch_op.add_column(sa.Column("grader_version", sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.drop_column("grader_version")
        batch_op.drop_column("regraded_from")

    with op.batch_alter_table("attempts", schema=None) as batch_op:
        batch_op.drop_column("grader_version")
        batch_op.drop_column("tampering")
