"""Failure causes (issue 26): each attempt row can keep its causes with their evidence (JSON, as
`harness.report.causes` finds them) and the version of the rules that found them. Both are NULL
until `wholeloop failures` first computes them from the run folder; causes stored under another
rules version are computed again and replaced.

Revision ID: 0004
Revises: 0003
Created: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("attempts", schema=None) as batch_op:
        batch_op.add_column(sa.Column("causes", sa.Text(), nullable=True))
        batch_op.add_column(sa.Column("causes_version", sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("attempts", schema=None) as batch_op:
        batch_op.drop_column("causes_version")
        batch_op.drop_column("causes")
