"""wholeloop's per-test time limit for pytest, loaded by grading (`-p wholeloop_test_limit`, from
grading's tools folder) with the limit in WHOLELOOP_TEST_LIMIT_S (seconds; unset or 0: no limit).

A test's setup, call or teardown that runs longer than the limit is interrupted where it is: a
watchdog thread sends the main thread a real-time signal whose handler raises TestTimeLimit inside
the test (a BaseException, as pytest's own outcomes: `except Exception` does not swallow it). pytest
records that phase as failed (an error in setup or teardown) and goes on with the next test, so a
test that hangs is a failing test and every other result is kept. A test that swallows it is
interrupted again after each further limit, and a phase that was interrupted is reported failed
even when the test caught the interruption (a bare `except:`, `except BaseException`,
`pytest.raises(BaseException)` around a call that hung: the limit must not turn a hang into a pass
or a skip; an xfail-marked test's interruption stays its expected failure). One stuck where Python never runs a signal handler (a
C loop that does not check for signals) is left to the whole run's limit (`timeouts.tests_s`).

Runs in the environment's Python (3.6 and later): no wholeloop import.
"""

import os
import signal
import threading
import time

import pytest

LIMIT_VAR = "WHOLELOOP_TEST_LIMIT_S"
# a real-time signal, not SIGALRM: tests and plugins (pytest-timeout) use SIGALRM and its timer
try:
    SIGNAL = signal.SIGRTMAX - 2
except AttributeError:  # a Python that does not name it: Linux's is 64
    SIGNAL = 62


class TestTimeLimit(BaseException):
    """A test phase ran past wholeloop's per-test time limit."""

    __test__ = False  # not a test class, whatever its name


class _Watchdog:
    def __init__(self, limit):
        self.limit = limit
        self.cond = threading.Condition()
        self.generation = 0
        self.phase = None  # (generation, what, deadline) of the phase the watchdog times
        self.active = None  # the generation running in the main thread (set without the lock)
        self.fired = None  # the generation whose time ran out
        self.what = ""
        self.closed = False
        self.main = threading.main_thread().ident or 0
        self.thread = threading.Thread(target=self._watch, name="wholeloop-test-limit", daemon=True)
        self.thread.start()

    def arm(self, what):
        with self.cond:
            self.generation += 1
            self.phase = (self.generation, what, time.monotonic() + self.limit)
            self.active = self.generation
            self.cond.notify()
            return self.generation

    def disarm(self):
        self.active = None  # first: a signal still on its way finds nothing to interrupt
        with self.cond:
            self.phase = None
            self.cond.notify()

    def close(self):
        self.active = None
        with self.cond:
            self.closed, self.phase = True, None
            self.cond.notify()
        self.thread.join(5)

    def _watch(self):
        with self.cond:
            while not self.closed:
                if self.phase is None:
                    self.cond.wait()
                    continue
                generation, what, deadline = self.phase
                left = deadline - time.monotonic()
                if left > 0:
                    self.cond.wait(left)
                    continue
                self.fired, self.what = generation, what
                self.phase = (generation, what, time.monotonic() + self.limit)  # again, if it is swallowed
                signal.pthread_kill(self.main, SIGNAL)

    def handler(self, signum, frame):
        if self.active is not None and self.active == self.fired:
            raise TestTimeLimit(
                f"{self.what} ran longer than {self.limit:g} s: wholeloop's per-test time limit (timeouts.test_s)"
            )


_watchdog = None
_previous = None


def pytest_configure(config):
    global _watchdog, _previous
    try:
        limit = float(os.environ.get(LIMIT_VAR) or 0)
    except ValueError:
        limit = 0
    if limit <= 0 or threading.current_thread() is not threading.main_thread() or _watchdog is not None:
        return
    _watchdog = _Watchdog(limit)
    _previous = signal.signal(SIGNAL, _watchdog.handler)


def pytest_unconfigure(config):
    global _watchdog
    if _watchdog is None:
        return
    _watchdog.close()
    signal.signal(SIGNAL, _previous if _previous is not None else signal.SIG_DFL)
    _watchdog = None


INTERRUPTED = "_wholeloop_interrupted"  # item attribute: phase ("setup", "call", "teardown") -> what ran out


def _timed(what, item, when):
    watchdog = _watchdog
    if watchdog is None:
        yield
        return
    generation = watchdog.arm(what)
    try:
        yield
    finally:
        while True:  # a signal landing here, after the phase ended, is not the test's
            try:
                watchdog.disarm()
                break
            except TestTimeLimit:
                continue
        if watchdog.fired == generation:  # interrupted, whatever the test did with it
            interrupted = getattr(item, INTERRUPTED, None) or {}
            interrupted[when] = what
            setattr(item, INTERRUPTED, interrupted)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item):
    yield from _timed("the setup of " + item.nodeid, item, "setup")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    yield from _timed(item.nodeid, item, "call")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item, nextitem):
    yield from _timed("the teardown of " + item.nodeid, item, "teardown")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A phase the limit interrupted fails, even when the test caught the interruption and went on
    to pass or skip (an xfail-marked test's stays xfailed: its expected failure)."""
    outcome = yield
    what = (getattr(item, INTERRUPTED, None) or {}).get(call.when)
    report = outcome.get_result()
    if what is None or report.failed or (report.skipped and hasattr(report, "wasxfail")):
        return
    report.outcome = "failed"
    report.longrepr = (
        f"{what} ran longer than {_watchdog.limit if _watchdog else 0:g} s: wholeloop's per-test time limit "
        "(timeouts.test_s) interrupted it, and the test caught the interruption"
    )
