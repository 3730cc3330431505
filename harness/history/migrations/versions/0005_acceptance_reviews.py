"""Acceptance in the history (issue 25): each attempt row keeps its acceptance axes as grading
recorded them (JSON, the results row's `acceptance`; NULL: not measured, as a row graded before
the axes), so a policy can be applied to rows read from the index as to a run folder's, and the
human verdicts that count for it (JSON: reviewer -> {verdict, reason, at}; NULL: none), which
`wholeloop review` tells the index as it records them.

Revision ID: 0005
Revises: 0004
Created: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("attempts", schema=None) as batch_op:
        batch_op.add_column(sa.Column("acceptance", sa.Text(), nullable=True))
        batch_op.add_column(sa.Column("reviews", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("attempts", schema=None) as batch_op:
        batch_op.drop_column("reviews")
        batch_op.drop_column("acceptance")
