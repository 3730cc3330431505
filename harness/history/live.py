"""A run indexing itself as it goes: `attach` hooks the index onto the run folder's one append point.

    hook = attach(runner.folder, url, warn=print_warning)   # before the run starts
    runner.run()                                             # each appended row is indexed at once
    hook.finish()                                            # the finish time, from the manifest

The index is a cache, so it never fails a run: a database that is down, refuses us or breaks
midway produces one warning (the URL without its password) and the run goes on unindexed; the
rows are all in the run folder, and `wholeloop history --add RUN` (or `--rebuild`) indexes them
later. A resumed run re-reads its folder when attached, so rows written while the index was
unreachable come in then too.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from ..records import ResultRow, RunFolder
from . import url as urls
from .db import HistoryIndex, LiveRun

Warn = Callable[[str], None]


class RunHook:
    """The listener on one run folder. After its first failure it stays quiet and does nothing."""

    def __init__(self, folder: RunFolder, url: str, warn: Warn) -> None:
        self.folder, self.url, self.warn = folder, urls.normalize(url), warn
        self.shown = urls.shown(self.url)
        self.index: HistoryIndex | None = None
        self.live: LiveRun | None = None
        self.failed: str | None = None
        self.rows = 0
        self._lock = threading.Lock()

    def start(self) -> RunHook:
        try:
            self.index = HistoryIndex.open(self.url)
            self.live = self.index.sync_run(self.folder)
        except Exception as exc:  # noqa: BLE001  (whatever the database or its driver raise: warn, go on)
            self._fail(exc)
            return self
        self.folder.on_row(self.on_row)
        return self

    def on_row(self, row: ResultRow) -> None:
        with self._lock:
            if self.failed or self.live is None:
                return
            try:
                self.live.add(row)
                self.rows += 1
            except Exception as exc:  # noqa: BLE001
                self._fail(exc)

    def finish(self) -> None:
        """The run's end as its manifest says; closes the connection."""
        with self._lock:
            if self.live is not None and self.index is not None and not self.failed:  # (live: an index too)
                try:
                    self.index.refresh_run(self.live)
                except Exception as exc:  # noqa: BLE001
                    self._fail(exc)
            if self.index is not None:
                self.index.close()
                self.index = None

    def _fail(self, exc: BaseException) -> None:
        self.failed = urls.scrub(str(exc), self.url) or type(exc).__name__
        if self.shown not in self.failed:
            self.failed = f"run history at {self.shown}: {self.failed}"
        self.warn(
            f"{self.failed}\n  the run goes on without the index: its folder has every row; index it later with "
            f"`wholeloop history --add {self.folder.path}`"
        )


def attach(folder: RunFolder, url: str, warn: Warn) -> RunHook:
    """Index `folder` now (rows already there, for a resumed run) and every row appended from now on."""
    return RunHook(folder, url, warn).start()


def index_folder(folder: RunFolder, url: str, warn: Warn) -> int | None:
    """Index a run folder written in one go (a regrade's): its rows, or None after one warning
    (never raises: the index is a cache)."""
    hook = RunHook(folder, url, warn).start()
    rows = hook.live.seq if hook.live is not None and not hook.failed else None
    hook.finish()
    return rows if not hook.failed else None


def default_url(run_dir: Path, explicit: str | None = None) -> str:
    """A run's index: --history-url, else $WHOLELOOP_HISTORY_URL, else history.sqlite beside the run folder."""
    return urls.resolve(explicit, Path(run_dir).resolve().parent)
