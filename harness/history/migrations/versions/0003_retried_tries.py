"""Retried tries (issue 10, rule 4): each attempt row says whether it belongs to a try the machine
failed that was tried again (`records.retried_tries`), whose spend counts in its configuration's
cost. Rows indexed before this revision read false until `history --add RUN` or `--rebuild`
re-reads them.

Revision ID: 0003
Revises: 0002
Created: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("attempts", schema=None) as batch_op:
        batch_op.add_column(sa.Column("retried", sa.Boolean(), nullable=False, server_default=sa.false()))


def downgrade() -> None:
    with op.batch_alter_table("attempts", schema=None) as batch_op:
        batch_op.drop_column("retried")
