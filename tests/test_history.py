"""The run history index (harness/history), against the real SQLite and a real PostgreSQL server:
every test that takes `history_url` runs once on each backend. Runs are fabricated with the real
writers (RunFolder, manifests); one real gold run of a demo task goes through the CLI."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from rich.console import Console
from sqlalchemy import MetaData, create_engine
from support.history import cli, manifest, outcomes, row, write_run

from harness.history.db import HistoryFilter, HistoryIndex, find_runs
from harness.history.live import attach
from harness.history.schema import HEAD, metadata
from harness.history.trend import trend
from harness.history.url import normalize, resolve, shown, sqlite_url
from harness.records import ResultRow, RunFolder, latest_rows
from harness.report.stats import ConfigRows, config_stats

ROOT = Path(__file__).resolve().parent.parent
DEMO_TASK = ROOT / "tasks" / "demo" / "inikit-001.yaml"


# ---------------------------------------------------------------------------- fabricated runs


# ---------------------------------------------------------------------------- backends


@pytest.fixture(params=["sqlite", "postgresql"])
def history_url(request, tmp_path):
    if request.param == "sqlite":
        return sqlite_url(tmp_path / "runs" / "history.sqlite")
    return request.getfixturevalue("postgres").create_database()


# ---------------------------------------------------------------------------- schema and migrations


def test_migrations_build_exactly_the_declared_schema(history_url):
    from alembic.autogenerate import compare_metadata
    from alembic.config import Config
    from alembic.migration import MigrationContext
    from alembic.script import ScriptDirectory

    from harness.history.db import MIGRATIONS

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    assert ScriptDirectory.from_config(config).get_current_head() == HEAD
    with HistoryIndex.open(history_url) as index:
        assert index.revision() == HEAD
        with index.engine.connect() as conn:
            diff = compare_metadata(MigrationContext.configure(conn, opts={"compare_type": True}), metadata)
        assert diff == [], diff
    with HistoryIndex.open(history_url) as again:  # at head: opening again changes nothing
        assert again.revision() == HEAD


def test_an_index_at_an_unknown_newer_revision_is_refused(history_url):
    from sqlalchemy import Column, String, Table, update

    from harness.history.db import HistoryError

    version = Table("alembic_version", MetaData(), Column("version_num", String(32)))
    with HistoryIndex.open(history_url) as index, index.engine.begin() as conn:
        conn.execute(update(version).values(version_num="9999"))
    with pytest.raises(HistoryError, match="9999"):
        HistoryIndex.open(history_url)


# ---------------------------------------------------------------------------- rows as they are written


def test_each_row_is_in_the_index_the_moment_it_is_appended(tmp_path, history_url):
    run_dir = tmp_path / "runs" / "r1"
    folder = RunFolder(run_dir, create=True)
    hook = attach(folder, history_url, pytest.fail)
    folder.update_manifest(
        lambda m: m.update(
            manifest(run_dir, "demo", datetime(2026, 1, 1, tzinfo=UTC), finished=False, tasks=["t00", "t01"])
        )
    )
    with HistoryIndex.open(history_url, create=False) as reader:
        written = [
            row("t00", outcome="unresolved", attempt=1, final=False),
            row("t00", attempt=2),
            row("t01", outcome="unresolved"),
            row("t01", attempt=1),
        ]  # t01 redone from attempt 1: a new try supersedes the first
        for n, r in enumerate(written, 1):
            folder.append(r)
            assert reader.row_count() == n  # a second connection sees it at once: committed
            [line] = reader.list_runs()
            expected = config_stats(ConfigRows("A", "A", run_dir, {}, latest_rows(folder.rows())))
            assert (line.trials, line.resolved, line.scored) == (expected.trials, expected.resolved, expected.scored)
        assert line.finished_at is None
    hook.finish()
    with HistoryIndex.open(history_url, create=False) as reader:
        [line] = reader.list_runs()
        assert (line.tasks, line.trials, line.resolved, line.suite) == (2, 2, 2, "demo")
        assert [r.task_id for r in reader.rows_of(line.key, "A")] == ["t00", "t00", "t01"]  # the current rows


def test_acceptance_axes_and_human_verdicts_are_kept_in_the_index(tmp_path, history_url, monkeypatch):
    """Migration 0005: each attempt's acceptance axes as grading recorded them (None: not
    measured), read back with its rows; the human verdicts that count, told by `review` and kept
    by a re-index (`history --add`), following the patch they were given on."""
    from harness.cli.reports import _tell_history_reviews
    from harness.records import Review
    from harness.vocabulary import ReviewVerdict

    monkeypatch.setenv("WHOLELOOP_HISTORY_URL", history_url)
    axes = {"files": ["a.py"], "debug_leftovers": [{"path": "a.py", "line": "print(x)"}]}
    run_dir = tmp_path / "runs" / "r1"
    folder = write_run(run_dir, [row("t00").model_copy(update={"acceptance": axes}), row("t01")], url=history_url)
    with HistoryIndex.open(history_url, create=False) as index:
        [line] = index.list_runs()
        assert [r.acceptance for r in index.rows_of(line.key, "A")] == [axes, None]
        assert index.stored_reviews(line.key) == {}
    first = folder.latest()[0]
    sha = folder.patch_sha256(first)
    for verdict, reason in ((ReviewVerdict.accept, "fine"), (ReviewVerdict.reject, "a print left in")):
        folder.add_review(
            Review(task_id="t00", config="A", patch_sha256=sha, verdict=verdict, reason=reason, reviewer="ann")
        )
    folder.add_review(  # on another patch: it does not count
        Review(task_id="t01", config="A", patch_sha256="0" * 64, verdict=ReviewVerdict.accept, reviewer="bob")
    )
    _tell_history_reviews(run_dir, Console(file=io.StringIO()))
    mock_at = "any"
    expected = {("t00", "A", 0, 1): {"ann": {"verdict": "reject", "reason": "a print left in", "at": mock_at}}}
    with HistoryIndex.open(history_url, create=False) as index:
        [line] = index.list_runs()
        kept = index.stored_reviews(line.key)
        assert {k: {n: {**v, "at": mock_at} for n, v in by.items()} for k, by in kept.items()} == expected
        assert all(v["at"] for by in kept.values() for v in by.values())
    done = cli("history", "--add", str(run_dir), env={"WHOLELOOP_HISTORY_URL": history_url})
    assert done.returncode == 0, done.stderr
    with HistoryIndex.open(history_url, create=False) as index:
        [line] = index.list_runs()
        assert index.stored_reviews(line.key) == kept
        assert [r.acceptance for r in index.rows_of(line.key, "A")] == [axes, None]


def test_rows_appended_from_many_threads_are_all_indexed(tmp_path, history_url):
    folder = RunFolder(tmp_path / "runs" / "threads", create=True)
    hook = attach(folder, history_url, pytest.fail)

    def worker(w: int) -> None:
        for i in range(10):
            folder.append(row(f"w{w}-t{i}"))

    threads = [threading.Thread(target=worker, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    hook.finish()
    with HistoryIndex.open(history_url, create=False) as index:
        assert index.row_count() == 40
        [line] = index.list_runs()
        assert line.trials == 40


def test_two_runs_writing_one_index_at_once(tmp_path, history_url):
    folders = [RunFolder(tmp_path / "runs" / f"r{i}", create=True) for i in range(2)]
    hooks = [attach(f, history_url, pytest.fail) for f in folders]  # two engines: two writers, as two processes

    def worker(folder: RunFolder) -> None:
        for i in range(25):
            folder.append(row(f"t{i:02d}"))

    threads = [threading.Thread(target=worker, args=(f,)) for f in folders]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for hook in hooks:
        hook.finish()
    with HistoryIndex.open(history_url, create=False) as index:
        assert sorted((r.run_id, r.trials) for r in index.list_runs()) == [("r0", 25), ("r1", 25)]


def test_a_copied_run_folder_indexed_live_takes_over_its_original(tmp_path, history_url):
    import shutil

    first = write_run(tmp_path / "runs" / "orig", outcomes(2, {0}), url=history_url)
    shutil.copytree(first.path, tmp_path / "runs" / "copy")  # same manifest, same run_uid
    copy = RunFolder(tmp_path / "runs" / "copy")
    hook = attach(copy, history_url, pytest.fail)
    copy.append(row("t02"))
    hook.finish()
    with HistoryIndex.open(history_url, create=False) as index:
        [line] = index.list_runs()
        assert (line.path, line.trials) == (str(copy.path.resolve()), 3)


def test_a_resumed_run_brings_in_the_rows_its_earlier_session_could_not_index(tmp_path, history_url):
    run_dir = tmp_path / "runs" / "resumed"
    write_run(run_dir, outcomes(3, {0, 1}))  # first session: no index at all
    folder = RunFolder(run_dir)
    hook = attach(folder, history_url, pytest.fail)  # the resumed session
    folder.append(row("t03"))
    hook.finish()
    with HistoryIndex.open(history_url, create=False) as index:
        [line] = index.list_runs()
        assert (line.trials, line.resolved) == (4, 3)


# ---------------------------------------------------------------------------- rebuild: the index is a cache


def fabricate_history(root: Path, url: str | None) -> list[Path]:
    """Six runs of two suites and three configurations over a week, a redo, an unknown price,
    infrastructure errors and one unfinished run."""
    day = datetime(2026, 3, 1, 9, tzinfo=UTC)
    runs = []
    for i in range(4):
        rows = outcomes(8, set(range(3 + i)), "gold+m1", model="m/1", agent="default")
        rows[1].outcome, rows[1].resolved = "infra_error", False
        rows.append(row("t02", "gold+m1", "resolved", attempt=1, model="m/1", agent="default"))  # a redo
        runs.append(write_run(root / f"demo-{i}", rows, started=day + timedelta(days=i), url=url).path)
    runs.append(
        write_run(
            root / "other-0",
            outcomes(5, {0}, "noop", model=None, agent="noop", cost=None),
            suite="other",
            started=day + timedelta(days=2, hours=3),
            url=url,
        ).path
    )
    runs.append(
        write_run(
            root / "demo-late",
            outcomes(8, {0, 1}, "cheap+m2", model="m/2"),
            started=day + timedelta(days=6),
            url=url,
            finished=False,
        ).path
    )
    return runs


def listing(url: str, root: Path, *args: str) -> str:
    done = cli("history", "--history-url", url, "--runs-root", str(root), *args)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_deleting_the_index_and_rebuilding_gives_the_same_history(tmp_path, history_url):
    root = tmp_path / "runs"
    fabricate_history(root, history_url)
    before = listing(history_url, root)
    before_trend = listing(history_url, root, "trend")
    assert "demo-3" in before and "other-0" in before and "unfinished" in before
    # lose the index entirely
    if history_url.startswith("sqlite"):
        for f in root.glob("history.sqlite*"):
            f.unlink()
        assert cli("history", "--history-url", history_url, "--runs-root", str(root)).returncode == 2
    else:
        engine = create_engine(normalize(history_url))
        with engine.begin() as conn:
            found = MetaData()
            found.reflect(conn)
            found.drop_all(conn)
        engine.dispose()
    done = cli("history", "--rebuild", "--history-url", history_url, "--runs-root", str(root))
    assert done.returncode == 0, done.stderr
    assert "6 runs" in done.stdout
    assert listing(history_url, root) == before
    assert listing(history_url, root, "trend") == before_trend


def test_listing_filters(tmp_path, history_url):
    root = tmp_path / "runs"
    fabricate_history(root, history_url)
    with HistoryIndex.open(history_url, create=False) as index:

        def ids(**kw) -> list[str]:
            return [r.run_id for r in index.list_runs(HistoryFilter(**kw))]

        assert ids() == ["demo-late", "demo-3", "other-0", "demo-2", "demo-1", "demo-0"]
        assert ids(suite="other") == ["other-0"]
        assert ids(suite=str(tmp_path / "tasks" / "other")) == ["other-0"]  # the suite's path works too
        assert ids(model="m/2") == ["demo-late"]
        assert ids(agent="noop") == ["other-0"]
        assert ids(config="gold+m1") == ["demo-3", "demo-2", "demo-1", "demo-0"]
        assert ids(since=datetime(2026, 3, 3, tzinfo=UTC)) == ["demo-late", "demo-3", "other-0", "demo-2"]
        assert ids(finished_only=True, suite="demo", config="cheap+m2") == []
        assert index.count_runs(HistoryFilter(suite="demo")) == 5
        assert [r.run_id for r in index.list_runs(limit=2)] == ["demo-late", "demo-3"]
    out = listing(history_url, root, "--suite", "demo", "--model", "m/1", "--since", "2026-03-02", "--limit", "2")
    assert "demo-3" in out and "demo-2" in out and "demo-1" not in out and "2 of 3 line(s)" in out


FILTERS = [
    {},
    {"suite": "demo"},
    {"suite": "other"},
    {"model": "m/1"},
    {"model": "m/2"},
    {"agent": "noop"},
    {"config": "gold+m1"},
    {"since": datetime(2026, 3, 3, tzinfo=UTC)},
    {"suite": "demo", "model": "m/1", "since": datetime(2026, 3, 2, 12, tzinfo=UTC)},
    {"suite": "nothing-like-it"},
]


def test_the_listing_runs_on_sqlite_without_sqlalchemy_and_agrees_with_it(tmp_path):
    """`wholeloop history` runs the SQL SQLAlchemy compiled (kept beside the index) with sqlite3
    alone: for every filter and limit it gives what HistoryIndex gives, and the command never
    imports SQLAlchemy once the shape is known."""
    from harness.history import listing as fast

    root = tmp_path / "runs"
    url = sqlite_url(root / "history.sqlite")
    fabricate_history(root, url)
    db = root / "history.sqlite"
    with HistoryIndex.open(url, create=False) as index:
        for kw in FILTERS:
            for limit in (None, 1, 2, 50):
                flt = HistoryFilter(**kw)
                slow = index.list_runs(flt, limit=limit)
                total = index.count_runs(flt) if limit and len(slow) == limit else len(slow)
                assert fast.list_runs(db, flt, limit=limit) == (slow, total), (kw, limit)
        assert fast.list_runs(db, HistoryFilter(run="demo-1"), limit=None) is None  # a shape it leaves to SQLAlchemy
    probe = (
        "import sys; from harness.cli import main\n"
        "try:\n    main(sys.argv[1:])\nexcept SystemExit as e:\n    assert not e.code, e.code\n"
        "print('sqlalchemy' in sys.modules)"
    )
    for args in ([], ["--suite", "demo", "--model", "m/1", "--since", "2026-03-02", "--limit", "2"]):
        done = subprocess.run(
            [sys.executable, "-c", probe, "history", "--runs-root", str(root), *args],
            capture_output=True,
            text=True,
            env={**os.environ, "COLUMNS": "200"},
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.splitlines()[-1] == "False", done.stdout
        assert done.stdout == listing(url, root, *args) + "False\n"  # what the command prints either way


def test_the_sqlalchemy_free_listing_steps_aside_when_its_sql_may_be_stale(tmp_path):
    """Made by other query code, for another schema revision, broken, or missing: the compiled SQL
    is not used (None: the caller goes through SQLAlchemy) and the listing is still right."""
    from sqlalchemy.dialects import sqlite

    from harness.history import listing as fast
    from harness.history.schema import runs

    root = tmp_path / "runs"
    url = sqlite_url(root / "history.sqlite")
    fabricate_history(root, url)
    db, side = root / "history.sqlite", fast.sidecar(root / "history.sqlite")
    good = side.read_text()
    assert fast.list_runs(db, HistoryFilter(), limit=50) is not None
    stale = json.loads(good)
    stale["key"] = "another version of the query code"
    side.write_text(json.dumps(stale))
    assert fast.list_runs(db, HistoryFilter(), limit=50) is None
    side.write_text("{not json")
    assert fast.list_runs(db, HistoryFilter(), limit=50) is None
    side.unlink()
    assert fast.list_runs(db, HistoryFilter(), limit=50) is None
    expected = listing(url, root)  # through SQLAlchemy, which leaves the SQL again
    assert side.exists() and fast.list_runs(db, HistoryFilter(), limit=50) is not None
    import sqlite3

    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE alembic_version SET version_num = '0001'")
    assert fast.list_runs(db, HistoryFilter(), limit=50) is None
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE alembic_version SET version_num = ?", (HEAD,))
    assert listing(url, root) == expected
    # a time bound the way SQLAlchemy's SQLite dialect binds it
    when = datetime(2026, 3, 2, 12, 30, 5, 123, tzinfo=UTC)
    bind = runs.c.started_at.type.dialect_impl(sqlite.dialect()).bind_processor(sqlite.dialect())
    assert fast.sqlite_value(when) == bind(when)


def test_listing_figures_match_the_report(tmp_path, history_url):
    root = tmp_path / "runs"
    runs = fabricate_history(root, history_url)
    from harness.report.stats import load_configs

    with HistoryIndex.open(history_url, create=False) as index:
        lines = {r.run_id: r for r in index.list_runs()}
        for cfg in load_configs(runs):
            stats, line = config_stats(cfg), lines[cfg.run_dir.name]
            assert (line.tasks, line.trials, line.scored, line.resolved, line.infra_errors) == (
                stats.tasks,
                stats.trials,
                stats.scored,
                stats.resolved,
                stats.infra_errors,
            )
            assert line.cost_usd == (None if stats.total_cost_usd is None else pytest.approx(stats.total_cost_usd))


def test_retried_tries_count_in_the_cost_the_same_live_and_rebuilt(tmp_path, history_url):
    """Issue 10, rule 4: a retried try's spend is the configuration's, in the index as in the report,
    whether the rows came in live or from a rebuild."""
    from harness.report.stats import load_configs

    def abandoned(task, attempt, cost):
        r = row(task, outcome="infra_error", attempt=attempt, final=False, cost=cost)
        r.retried = True
        return r

    rows = [
        row("t00", outcome="unresolved", final=False, cost=0.1),
        abandoned("t00", 2, 0.05),  # try 1, retried
        row("t00", cost=0.2),  # try 2 counts
        row("t01", outcome="infra_error", cost=0.03),
        row("t01", cost=0.1),  # redone on resume
        abandoned("t02", 1, 0.07),
    ]  # killed after its retry row
    run = write_run(tmp_path / "runs" / "r", rows, url=history_url).path
    (cfg,) = load_configs([run])
    stats = config_stats(cfg)
    assert (stats.trials, stats.resolved, stats.retried_tries) == (2, 2, 3)
    assert stats.retried_cost_usd == pytest.approx(0.25) and stats.total_cost_usd == pytest.approx(0.55)
    assert stats.cost_per_resolved.value == pytest.approx(0.24)  # (0.35 + 0.13) / 2: a trial costs its retries too
    for how in ("live", "rebuilt"):
        if how == "rebuilt":
            assert (
                cli("history", "--rebuild", "--history-url", history_url, "--runs-root", str(run.parent)).returncode
                == 0
            )
        with HistoryIndex.open(history_url, create=False) as index:
            (line,) = index.list_runs()
            assert (line.tasks, line.trials, line.incomplete, line.resolved) == (2, 2, 0, 2), how
            assert line.cost_usd == pytest.approx(stats.total_cost_usd), how
            (aggs,) = index.task_aggregates([(line.key, line.config)]).values()
            assert [(a.task_id, a.cost_usd) for a in aggs if a.scored] == [
                ("t00", pytest.approx(0.35)),
                ("t01", pytest.approx(0.13)),
            ], how


def test_trend_points_are_the_reports_figures(tmp_path, history_url):
    root = tmp_path / "runs"
    runs = fabricate_history(root, history_url)
    from harness.report.stats import load_configs

    with HistoryIndex.open(history_url, create=False) as index:
        series = {(s.suite, s.config): s for s in trend(index)}
    assert set(series) == {("demo", "gold+m1"), ("other", "noop"), ("demo", "cheap+m2")}
    gold = series[("demo", "gold+m1")]
    assert [p.run_id for p in gold.points] == ["demo-0", "demo-1", "demo-2", "demo-3"]  # oldest first
    assert [p.resolve_rate.value for p in gold.points] == sorted(p.resolve_rate.value for p in gold.points)
    points = {p.run_id: p for s in series.values() for p in s.points}
    for cfg in load_configs(runs):
        stats, point = config_stats(cfg), points[cfg.run_dir.name]
        for ours, theirs in (
            (point.resolve_rate, stats.resolve_rate),
            (point.cost_per_resolved, stats.cost_per_resolved),
            (point.time_per_task, stats.time_per_trial),
        ):
            assert (ours.method, ours.n, ours.unknown, ours.unbounded) == (
                theirs.method,
                theirs.n,
                theirs.unknown,
                theirs.unbounded,
            )
            for a, b in ((ours.value, theirs.value), (ours.low, theirs.low), (ours.high, theirs.high)):
                assert a == (None if b is None else pytest.approx(b, rel=1e-9))
    assert series[("other", "noop")].points[0].cost_per_resolved.unknown


def test_the_history_tables_show_the_accept_rate_beside_the_resolve_rate(tmp_path, history_url):
    """`history` and `history trend` print the accept rate (default policy, from the axes the index
    keeps) beside the resolve rate, as `report` judges the same rows; a run whose resolved trials
    have no axes says "n/m" (not measured), never a rate it cannot know."""
    from harness.history import listing as fast
    from harness.report.acceptance import judge

    root = tmp_path / "runs"
    checked = {"checks": ["ruff==0.6.9"], "new": [], "error": None}
    clean = {"files": ["a.py"], "own_checks": checked}
    debug = {**clean, "debug_leftovers": [{"path": "a.py", "line": "print(x)"}]}
    rows = [
        row("t00").model_copy(update={"acceptance": clean}),
        row("t01").model_copy(update={"acceptance": debug}),
        row("t02", outcome="unresolved"),
        row("t03").model_copy(update={"acceptance": clean}),
    ]
    assert [judge(r).accepted for r in rows] == [True, False, False, True]
    day = datetime(2026, 3, 1, 9, tzinfo=UTC)
    write_run(root / "old", outcomes(2, {0, 1}), started=day, url=history_url)  # graded before the axes
    write_run(root / "new", rows, started=day + timedelta(days=1), url=history_url)
    out = listing(history_url, root, "--json", str(tmp_path / "h.json"))
    head, new, old = out.splitlines()[:3]
    assert head.split()[6:12] == ["resolved", "rate", "accepted", "accept", "rate", "infra"], head
    assert new.split()[2] == "new" and new.split()[6:10] == ["3/4", "75%", "2/4", "50%"], new
    assert old.split()[2] == "old" and old.split()[6:10] == ["2/2", "100%", "0/2", "n/m"], old
    assert "accept rate n/m: not measured, 2 resolved trial(s) without acceptance axes" in " ".join(out.split())
    data = {d["run_id"]: d for d in json.loads((tmp_path / "h.json").read_text())}
    assert (data["new"]["accept_rate"], data["new"]["accepted"], data["new"]["not_measured"]) == (0.5, 2, 0)
    assert (data["old"]["accept_rate"], data["old"]["not_measured"]) == (None, 2)
    if history_url.startswith("sqlite"):  # the listing without SQLAlchemy gives the same counts
        from harness.history.types import HistoryFilter

        found, _ = fast.list_runs(root / "history.sqlite", HistoryFilter(), limit=50)
        assert [(r.run_id, r.accepted, r.not_measured) for r in found] == [("new", 2, 0), ("old", 0, 2)]
    trend = listing(history_url, root, "trend")
    assert "accept rate [95% CI]" in trend and "50% [" in trend, trend


def test_trend_in_the_terminal_and_as_html(tmp_path, history_url):
    root = tmp_path / "runs"
    runs = fabricate_history(root, history_url)
    out = listing(
        history_url, root, "trend", "--suite", "demo", "--config", "gold+m1", "--html", str(tmp_path / "t.html")
    )
    assert "demo · gold+m1" in out and "resolve rate [95% CI]" in out and "[" in out
    assert out.count("demo-") == 4
    page = (tmp_path / "t.html").read_text()
    assert page.count('<svg class="chart trend"') == 3 and "Resolve rate" in page and "demo-3" in page
    # the HTML report of a run shows the history of its suite and configuration
    env = {"WHOLELOOP_HISTORY_URL": history_url}
    done = cli("report", str(runs[3]), "--html", str(tmp_path / "r.html"), env=env)
    assert done.returncode == 0, done.stderr
    report = (tmp_path / "r.html").read_text()
    assert 'id="over-time"' in report and report.count('<svg class="chart trend"') == 3
    assert "demo-0" in report and "other-0" not in report.split('id="over-time"')[1].split("</section>")[0]


# ---------------------------------------------------------------------------- never fail a run, never show a password


def test_a_history_that_is_down_only_warns(tmp_path):
    from support.pgserver import free_port

    url = f"postgresql://wl:hunter2-{os.getpid()}@127.0.0.1:{free_port()}/wl"  # nothing listens there
    warnings: list[str] = []
    folder = write_run(tmp_path / "runs" / "r", outcomes(3, {0}), url=url, warn=warnings.append)
    assert len(RunFolder(folder.path).rows()) == 3  # the run's records are whole
    assert len(warnings) == 1  # once, not once per row
    assert "hunter2" not in warnings[0] and "wl:***@127.0.0.1" in warnings[0] and "history --add" in warnings[0]


def test_a_history_that_breaks_midway_only_warns(tmp_path, postgres):
    url = postgres.create_database()
    warnings: list[str] = []
    folder = RunFolder(tmp_path / "runs" / "r", create=True)
    hook = attach(folder, url, warnings.append)
    folder.append(row("t00"))
    with HistoryIndex.open(url) as other, other.engine.begin() as conn:  # the table goes away under the run
        metadata.drop_all(conn)
    folder.append(row("t01"))
    folder.append(row("t02"))
    hook.finish()
    assert len(folder.rows()) == 3 and len(warnings) == 1
    assert postgres.password not in warnings[0]


def test_a_wrong_password_is_reported_without_it(postgres):
    url = postgres.url(password="not-the-password-123")
    done = cli("history", "--history-url", url)
    assert done.returncode == 2
    assert "not-the-password-123" not in done.stdout + done.stderr
    assert "***" in done.stderr and "password authentication failed" in done.stderr


def test_a_url_without_a_driver_is_one_line_without_its_password():
    done = cli("history", "--history-url", "mysql://u:secretpw@h/db")
    assert done.returncode == 2 and "secretpw" not in done.stdout + done.stderr
    assert done.stderr.strip().startswith("error: run history at mysql://u:***@h/db") and "Traceback" not in done.stderr


def test_urls_are_resolved_and_shown_without_passwords(monkeypatch):
    assert shown(normalize("postgresql://u:p%40ss@h:5/db")) == "postgresql+psycopg://u:***@h:5/db"
    assert normalize("postgres://u@h/db") == "postgresql+psycopg://u@h/db"
    assert normalize("/tmp/x.sqlite") == "sqlite:////tmp/x.sqlite"
    monkeypatch.delenv("WHOLELOOP_HISTORY_URL", raising=False)
    assert resolve(None, Path("/r")) == "sqlite:////r/history.sqlite"
    monkeypatch.setenv("WHOLELOOP_HISTORY_URL", "postgresql://u:pw@h/db")
    assert resolve(None, Path("/r")) == "postgresql+psycopg://u:pw@h/db"
    assert resolve("sqlite:////x.sqlite", Path("/r")) == "sqlite:////x.sqlite"  # the flag wins


@pytest.mark.docker
def test_a_real_demo_run_indexes_its_rows_and_keeps_the_password_out(tmp_path, postgres):
    """`wholeloop run tasks/demo --agent gold` (one demo task) with a PostgreSQL history whose URL
    has a password: the rows are indexed; the password is in no file of the run and no output line.
    Its regrade is indexed too, as a run of its own. Then a run with nothing listening: it warns
    and succeeds."""
    url = postgres.create_database()
    run_dir = tmp_path / "runs" / "gold"
    done = cli("run", str(DEMO_TASK), "--agent", "gold", "--out", str(run_dir), "--history-url", url)
    assert done.returncode == 0, done.stdout + done.stderr
    output = done.stdout + done.stderr
    assert postgres.password not in output and "warning" not in output
    for path in run_dir.rglob("*"):
        if path.is_file():
            assert postgres.password.encode() not in path.read_bytes(), path
    recorded = json.loads((run_dir / "manifest.json").read_text())
    assert "--history-url" in recorded["command"] and any("***@" in a for a in recorded["command"])
    with HistoryIndex.open(url, create=False) as index:
        [line] = index.list_runs()
        assert (line.run_id, line.suite, line.resolved, line.trials) == ("gold", "demo", 1, 1)
        assert line.finished_at is not None
    listed = cli("history", "--history-url", url)
    assert "gold" in listed.stdout and postgres.password not in listed.stdout + listed.stderr

    # `wholeloop regrade` of that run: indexed as a run of its own naming its source; its manifest
    # records the regrade's command line (sys.argv, URL included): the scrub boundary keeps the password out
    regraded = tmp_path / "runs" / "gold-regraded"
    again = cli("regrade", str(run_dir), "--out", str(regraded), "--history-url", url)
    assert again.returncode == 0, again.stdout + again.stderr
    assert postgres.password not in again.stdout + again.stderr and "warning" not in again.stdout
    for path in regraded.rglob("*"):
        if path.is_file():
            assert postgres.password.encode() not in path.read_bytes(), path
    with HistoryIndex.open(url, create=False) as index:
        found = {r.run_id: r for r in index.list_runs()}
        assert set(found) == {"gold", "gold-regraded"}
        assert found["gold-regraded"].regraded_from == found["gold"].uid and found["gold-regraded"].resolved == 1

    from support.pgserver import free_port

    dead = postgres.url(password=postgres.password).replace(f":{postgres.port}/", f":{free_port()}/")
    down = cli(
        "run",
        str(DEMO_TASK),
        "--agent",
        "gold",
        "--out",
        str(tmp_path / "runs" / "down"),
        env={"WHOLELOOP_HISTORY_URL": dead},
    )
    assert down.returncode == 0, down.stdout + down.stderr
    assert "warning" in down.stdout and "history --add" in down.stdout
    assert postgres.password not in down.stdout + down.stderr
    assert [r.outcome for r in RunFolder(tmp_path / "runs" / "down").rows()] == ["resolved"]


def test_find_runs_does_not_descend_into_run_folders(tmp_path):
    from harness.history.db import RESULTS_FILE

    assert RESULTS_FILE == RunFolder.RESULTS
    write_run(tmp_path / "a", outcomes(1, {0}))
    write_run(tmp_path / "team" / "b", outcomes(1, {0}))
    (tmp_path / "a" / "attempts" / "nested").mkdir(parents=True)
    (tmp_path / "a" / "attempts" / "nested" / "results.jsonl").write_text("")
    assert find_runs([tmp_path]) == [tmp_path / "a", tmp_path / "team" / "b"]


def test_the_over_time_section_renders_in_a_browser(tmp_path):
    """The HTML report with its "Over time" section, opened in headless chromium: no script
    errors, three charts drawn with a point per run, the per-run table in the page."""
    from support.browser import CHROMIUM, Browser

    if not CHROMIUM:
        if os.environ.get("CI"):
            pytest.fail("CI needs chromium (bash scripts/setup.sh installs it)")
        pytest.skip("chromium not installed")
    root = tmp_path / "runs"
    runs = fabricate_history(root, sqlite_url(root / "history.sqlite"))
    page = tmp_path / "report.html"
    done = cli("report", str(runs[3]), "--html", str(page))
    assert done.returncode == 0, done.stderr
    browser = Browser(tmp_path / "profile")
    try:
        browser.open(page)
        assert browser.errors() == []
        sizes = browser.js("""JSON.stringify([...document.querySelectorAll('#over-time svg.trend')].map(
            s => [s.getBoundingClientRect().width, s.querySelectorAll('circle').length]))""")
        assert json.loads(sizes) == [[560, 4], [560, 4], [560, 4]]
        assert browser.js("document.querySelector('#over-time table').rows.length") == 5  # header + four runs
    finally:
        browser.close()


def test_a_crash_log_hides_a_history_urls_password(tmp_path, monkeypatch):
    from harness.cli import write_crash_log

    monkeypatch.setenv("WHOLELOOP_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(sys, "argv", ["wholeloop", "history", "--history-url", "postgresql://wl:s3cret-pw@db:5432/h"])
    log = write_crash_log(RuntimeError("boom at postgresql://wl:s3cret-pw@db:5432/h"))
    text = log.read_text()
    assert "s3cret-pw" not in text and "postgresql://wl:***@db:5432/h" in text and "boom" in text


# ---------------------------------------------------------------------------- regrades, tampering, upgrades


def write_regrade(source: RunFolder, out: Path, changes: dict[str, dict], url: str | None) -> RunFolder:
    """A regrade's folder as `wholeloop regrade` (harness/run/regrade.py) writes it: the source's
    rows with new outcomes (and tampering), then its manifest copied (run_uid included) with
    regraded_from and the grader version; indexed afterwards, as the regrade command does."""
    from harness.history.live import index_folder

    target = RunFolder(out, create=True)
    for r in source.latest():
        change = changes.get(r.task_id, {})
        target.append(
            ResultRow.model_validate(
                {
                    **r.model_dump(),
                    "run_id": out.name,
                    "grader_version": 2,
                    **change,
                    "regraded_from": {"outcome": r.outcome.value, "grader_version": 1},
                }
            )
        )
    manifest = source.manifest()

    def record(m: dict) -> None:
        m.update({k: v for k, v in manifest.items() if k not in ("run_id", "images")})
        m["run_id"], m["grader_version"] = out.name, 2
        m["regraded_from"] = {
            "run_dir": str(source.path),
            "run_id": manifest["run_id"],
            "grader_versions": [1],
            "at": "2026-03-09T10:00:00+00:00",
            "command": ["wholeloop", "regrade"],
        }

    target.update_manifest(record)
    if url:
        assert index_folder(target, url, warn=pytest.fail) == len(target.rows())
    return target


def test_a_regraded_run_is_a_run_of_its_own_standing_in_for_its_source(tmp_path, history_url):
    from harness.history.query import Query
    from harness.history.query import resolve as resolve_query

    root = tmp_path / "runs"
    day = datetime(2026, 3, 1, 9, tzinfo=UTC)
    older = write_run(root / "main-0", outcomes(10, set(range(4))), started=day - timedelta(days=1), url=history_url)
    source = write_run(root / "main-1", outcomes(10, set(range(6))), started=day, url=history_url)
    # grader v2: t00 was a forged pass (tampering), t09 resolves now
    write_regrade(
        source,
        root / "main-1-regraded-v2",
        {
            "t00": {"outcome": "unresolved", "resolved": False, "tampering": "pytest channels disagree on 3 tests"},
            "t09": {"outcome": "resolved", "resolved": True},
        },
        history_url,
    )

    def check(index: HistoryIndex) -> None:
        found = {r.run_id: r for r in index.list_runs()}
        assert set(found) == {"main-0", "main-1", "main-1-regraded-v2"}  # the source keeps its entry
        new, old = found["main-1-regraded-v2"], found["main-1"]
        assert new.uid != old.uid and new.regraded_from == old.uid and old.regraded_from is None
        assert (new.resolved, new.tampering, old.resolved, old.tampering) == (6, 1, 6, 0)
        rows = {r.task_id: r for r in index.rows_of(new.key, new.config)}
        assert rows["t00"].tampering and rows["t00"].grader_version == 2 and not rows["t01"].tampering
        # the trend shows the re-graded run once, as its regrade, at the source's time
        (series,) = trend(index, HistoryFilter(suite="demo"))
        assert [p.run_id for p in series.points] == ["main-0", "main-1-regraded-v2"]
        assert series.points[-1].started_at == old.started_at
        # `latest` is the regrade (the same attempts, the newer grader), never the source
        run, _ = resolve_query(index, Query("latest"), suite="demo", config="A")
        assert run.run_id == "main-1-regraded-v2"

    with HistoryIndex.open(history_url) as index:
        check(index)
        out = listing(history_url, root)
        line = next(x for x in out.splitlines() if "main-1-regraded-v2" in x)
        assert f"regrade of {index.list_runs(HistoryFilter(run='main-1'))[0].uid[:12]}" in line
        assert "1 suspected tampering" in line
        index.rebuild([root])  # from the folders alone: the same
        check(index)
    # the gate against `latest` names the baseline's suspected tampering
    cand = write_run(tmp_path / "pr" / "cand", outcomes(10, set(range(6))), started=day + timedelta(days=1))
    done = cli("gate", "latest", str(cand.path), "--history-url", history_url)
    assert "latest = main-1-regraded-v2" in done.stdout and "suspected tampering on 1 task(s): t00" in done.stdout, (
        done.stdout
    )
    assert older.path.exists()


def test_an_index_of_the_first_schema_is_upgraded_keeping_its_runs(tmp_path, history_url):
    from alembic import command
    from alembic.config import Config

    from harness.history.db import MIGRATIONS

    (tmp_path / "runs").mkdir(exist_ok=True)
    engine = create_engine(normalize(history_url))
    with engine.begin() as conn:  # an index as the first revision made it, with a run in it
        config = Config()
        config.set_main_option("script_location", str(MIGRATIONS))
        config.attributes["connection"] = conn
        command.upgrade(config, "0001")
    engine.dispose()
    first = MetaData()
    first.reflect(create_engine(normalize(history_url)))
    assert "tampering" not in first.tables["attempts"].c
    # a run indexed by a wholeloop of that schema, through the same tables (columns of 0001 only)
    with create_engine(normalize(history_url)).begin() as conn:
        conn.execute(
            first.tables["runs"]
            .insert()
            .values(
                id=1,
                uid="old-run",
                run_id="old",
                path="/x/old",
                started_at=datetime(2026, 1, 1, tzinfo=UTC),
                finished_at=datetime(2026, 1, 1, 1, tzinfo=UTC),
                indexed_at=datetime.now(UTC),
            )
        )
        conn.execute(
            first.tables["attempts"]
            .insert()
            .values(
                run=1,
                seq=0,
                current=True,
                task_id="t",
                task_hash="h",
                config="A",
                agent="a",
                repeat=0,
                attempt=1,
                final=True,
                outcome="resolved",
                resolved=True,
                total_s=1.0,
                agent_s=1.0,
                steps=1,
                input_tokens=1,
                output_tokens=1,
            )
        )
    with HistoryIndex.open(history_url) as index:  # brought to head on open
        assert index.revision() == HEAD
        (run,) = index.list_runs()
        assert (run.run_id, run.resolved, run.scored, run.tampering, run.regraded_from) == ("old", 1, 1, 0, None)


def test_a_history_urls_password_is_a_secret_of_the_scrub_boundary(tmp_path):
    from harness import scrub
    from harness.history.url import protect

    password = "pg-Pass%2Fw0rd-" + os.urandom(4).hex()  # percent-encoded in the URL: "/" in the password
    protect(f"postgresql://wl:{password}@db.example:5432/history")
    plain = password.replace("%2F", "/")
    for text in (f"connect failed for {password}", f"echoed {plain} back", json.dumps({"dsn": plain})):
        cleaned = scrub.scrub_text(text)
        assert password not in cleaned and plain not in cleaned, cleaned
