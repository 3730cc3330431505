"""The first schema: runs, and their attempts (one per results.jsonl row).

Revision ID: 0001
Revises:
Created: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "runs",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("uid", sa.String(64), nullable=False),
        sa.Column("run_id", sa.String(255), nullable=False),
        sa.Column("path", sa.Text(), nullable=False),
        sa.Column("host", sa.String(255), nullable=False, server_default=""),
        sa.Column("suite", sa.String(255), nullable=False, server_default=""),
        sa.Column("suite_path", sa.Text(), nullable=False, server_default=""),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("wholeloop_version", sa.String(64), nullable=True),
        sa.Column("git_commit", sa.String(64), nullable=True),
        sa.Column("indexed_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_runs"),
        sa.UniqueConstraint("uid", name="uq_runs_uid"),
    )
    op.create_index("ix_runs_suite_started_at", "runs", ["suite", "started_at"])
    op.create_index("ix_runs_started_at", "runs", ["started_at"])
    op.create_table(
        "attempts",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("run", sa.Integer(), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("current", sa.Boolean(), nullable=False),
        sa.Column("task_id", sa.String(255), nullable=False),
        sa.Column("task_hash", sa.String(128), nullable=False),
        sa.Column("config", sa.String(255), nullable=False),
        sa.Column("agent", sa.String(255), nullable=False),
        sa.Column("model", sa.String(255), nullable=True),
        sa.Column("repeat", sa.Integer(), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("final", sa.Boolean(), nullable=False),
        sa.Column("outcome", sa.String(64), nullable=False),
        sa.Column("resolved", sa.Boolean(), nullable=False),
        sa.Column("stop_reason", sa.String(64), nullable=False, server_default=""),
        sa.Column("cost_usd", sa.Float(), nullable=True),
        sa.Column("total_s", sa.Float(), nullable=False),
        sa.Column("agent_s", sa.Float(), nullable=False),
        sa.Column("steps", sa.Integer(), nullable=False),
        sa.Column("input_tokens", sa.Integer(), nullable=False),
        sa.Column("output_tokens", sa.Integer(), nullable=False),
        sa.Column("transcript_path", sa.Text(), nullable=False, server_default=""),
        sa.Column("dir", sa.Text(), nullable=False, server_default=""),
        sa.Column("started_at", sa.String(40), nullable=False, server_default=""),
        sa.Column("finished_at", sa.String(40), nullable=False, server_default=""),
        sa.PrimaryKeyConstraint("id", name="pk_attempts"),
        sa.ForeignKeyConstraint(["run"], ["runs.id"], name="fk_attempts_run_runs", ondelete="CASCADE"),
        sa.UniqueConstraint("run", "seq", name="uq_attempts_run_seq"),
    )
    op.create_index("ix_attempts_run_current_config", "attempts", ["run", "current", "config"])
    op.create_index("ix_attempts_config_task_id", "attempts", ["config", "task_id"])


def downgrade() -> None:
    op.drop_table("attempts")
    op.drop_table("runs")
