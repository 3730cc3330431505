"""The index's tables, as SQLAlchemy Core metadata: what queries are written against.

The database itself is created and changed only by the Alembic migrations in `migrations/`;
`HEAD` names the newest one, and a test checks that the migrated database matches these tables
on both backends (SQLite and PostgreSQL), so the two never drift apart.

    runs      one per run folder: identity, where it was indexed from, suite, times, versions; a
              regrade (`wholeloop regrade`) names the run it re-graded
    attempts  one per row of its results.jsonl (seq = the row's position), with `current`
              false for rows an earlier try left behind (the run folder's latest-row rule), and
              `retried` true for rows of a try the machine failed that was tried again

Only what listing, trends and the gate need is kept per row (outcome, cost, time, tokens, the
transcript's path, the task's content hash, the failure causes once computed); per-test results stay in
the run folder.
"""

from __future__ import annotations

from sqlalchemy import (
    Boolean,
    Column,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
)
from sqlalchemy import false as sa_false

HEAD = "0005"  # the newest migration's revision id (tests/test_history.py checks it against Alembic's head)

metadata = MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_N_name)s",
        "uq": "uq_%(table_name)s_%(column_0_N_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    }
)

runs = Table(
    "runs",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("uid", String(64), nullable=False),  # manifest run_uid, or a hash of path + run id + start
    Column("run_id", String(255), nullable=False),  # the run folder's name (manifest run_id)
    Column("path", Text, nullable=False),  # absolute path of the run folder where it was indexed
    Column("host", String(255), nullable=False, server_default=""),
    Column("suite", String(255), nullable=False, server_default=""),  # the tasks' folder name, e.g. "demo"
    Column("suite_path", Text, nullable=False, server_default=""),
    Column("started_at", DateTime(timezone=True), nullable=True),
    Column("finished_at", DateTime(timezone=True), nullable=True),
    Column("wholeloop_version", String(64), nullable=True),
    Column("git_commit", String(64), nullable=True),
    Column("regraded_from", String(64), nullable=True),  # `wholeloop regrade`: the uid of the run re-graded
    Column("grader_version", Integer, nullable=True),  # the manifest's (a regrade's grader)
    Column("indexed_at", DateTime(timezone=True), nullable=False),
    UniqueConstraint("uid"),
    Index(None, "suite", "started_at"),
    Index(None, "started_at"),
)

attempts = Table(
    "attempts",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("run", Integer, ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
    Column("seq", Integer, nullable=False),  # position among the valid rows of results.jsonl
    Column("current", Boolean, nullable=False),  # False: superseded by a later try of its unit
    Column("task_id", String(255), nullable=False),
    Column("task_hash", String(128), nullable=False),
    Column("config", String(255), nullable=False),
    Column("agent", String(255), nullable=False),
    Column("model", String(255), nullable=True),
    Column("repeat", Integer, nullable=False),
    Column("attempt", Integer, nullable=False),
    Column("final", Boolean, nullable=False),
    Column("outcome", String(64), nullable=False),
    Column("resolved", Boolean, nullable=False),
    Column("stop_reason", String(64), nullable=False, server_default=""),
    Column("cost_usd", Float, nullable=True),  # NULL: the price was unknown (never 0)
    Column("total_s", Float, nullable=False),
    Column("agent_s", Float, nullable=False),
    Column("steps", Integer, nullable=False),
    Column("input_tokens", Integer, nullable=False),
    Column("output_tokens", Integer, nullable=False),
    Column("transcript_path", Text, nullable=False, server_default=""),  # relative to the run folder
    Column("dir", Text, nullable=False, server_default=""),
    Column("started_at", String(40), nullable=False, server_default=""),
    Column("finished_at", String(40), nullable=False, server_default=""),
    Column("tampering", Text, nullable=True),  # the grade's suspected tampering (its channels disagreed)
    Column("grader_version", Integer, nullable=True),
    # a row of a retried try (the machine failed it, the unit was tried again: records.retried_tries):
    # never current, its spend counts in its configuration's cost
    Column("retried", Boolean, nullable=False, server_default=sa_false()),
    # the attempt's failure causes with their evidence (JSON, harness.report.causes) and the rules
    # version that found them; NULL until `wholeloop failures` computes them from the run folder
    Column("causes", Text, nullable=True),
    Column("causes_version", Integer, nullable=True),
    # the acceptance axes grading recorded (JSON, the row's `acceptance`; NULL: not measured), and
    # the human verdicts that count (JSON, reviewer -> {verdict, reason, at}; NULL: none)
    Column("acceptance", Text, nullable=True),
    Column("reviews", Text, nullable=True),
    UniqueConstraint("run", "seq"),
    Index(None, "run", "current", "config"),
    Index(None, "config", "task_id"),
)
