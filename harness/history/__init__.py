"""Run history: an index of every run (SQLite beside the run folders, or a team's PostgreSQL).

A cache of the run folders, never the truth: rows enter it through the run folder's one append
point as they are written (`live.attach`), `HistoryIndex.rebuild` recreates it from the folders,
and a lost or unreachable index loses nothing. Reads: `HistoryIndex.list_runs` (what `wholeloop
history` prints), `trend.trend_points` (resolve rate, cost per resolved task and time per task
over time, with intervals), `HistoryIndex.rows_of` (a baseline for `wholeloop gate`).

Never imports sandbox or the runner (an import-linter contract).
"""
