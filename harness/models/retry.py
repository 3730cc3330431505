"""Retries, in one place for every adapter.

The SDKs' own retries are switched off (max_retries=0 / num_retries=0) so that every retry is
decided here, recorded as a RetryEvent on the Turn, and its wait kept out of the agent's time.
Retryable ModelErrors (429, 5xx, timeouts, connection failures) are retried with jittered
exponential backoff, or exactly as long as the server's Retry-After asks, capped at
``Settings.retry_max_wait_s``. Everything else is raised at once.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from tenacity import RetryCallState, RetryError, Retrying, retry_if_exception, stop_after_attempt
from tenacity.wait import wait_exponential_jitter

from .errors import ModelError, ModelUnavailable
from .types import RetryEvent, Settings, SleepFn, Turn

#: Backoff when the server gives no Retry-After: 1 s, 2 s, 4 s ... plus up to 1 s of jitter, so
#: parallel attempts that failed together do not retry together.
BACKOFF_INITIAL_S = 1.0
BACKOFF_JITTER_S = 1.0


def _retryable(exc: BaseException) -> bool:
    return isinstance(exc, ModelError) and exc.retryable


def call_with_retries(
    attempt: Callable[[], Turn], settings: Settings, *, sleep: SleepFn = time.sleep, what: str = "model"
) -> Turn:
    """Run ``attempt`` until it returns a Turn, retrying retryable ModelErrors.

    Returns the Turn with ``retries``, ``retry_wait_s`` and ``latency_s`` filled in.
    Raises the first non-retryable ModelError as is, or ModelUnavailable (caused by the last
    error) once ``settings.max_retries`` retries are spent; either carries the RetryEvents so far.
    """
    cap = settings.retry_max_wait_s
    backoff = wait_exponential_jitter(initial=BACKOFF_INITIAL_S, max=cap, jitter=BACKOFF_JITTER_S)
    events: list[RetryEvent] = []
    slept_real = 0.0

    def wait(state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        asked = getattr(exc, "retry_after_s", None)
        if asked is not None:
            return min(float(asked), cap)
        return min(backoff(state), cap)

    def before_sleep(state: RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome else None
        events.append(
            RetryEvent(
                attempt=state.attempt_number,
                error_type=type(exc).__name__,
                status_code=getattr(exc, "status_code", None),
                message=str(exc)[:500],
                wait_s=state.next_action.sleep if state.next_action else 0.0,
            )
        )

    def timed_sleep(seconds: float) -> None:
        # Real time spent sleeping, so latency excludes it even when `sleep` is a test double.
        nonlocal slept_real
        t = time.monotonic()
        sleep(seconds)
        slept_real += time.monotonic() - t

    retrying = Retrying(
        sleep=timed_sleep,
        stop=stop_after_attempt(settings.max_retries + 1),
        wait=wait,
        retry=retry_if_exception(_retryable),
        before_sleep=before_sleep,
        reraise=False,
    )
    start = time.monotonic()
    try:
        turn = retrying(attempt)
    except RetryError as e:
        last = e.last_attempt.exception()
        err = ModelUnavailable(
            f"{what}: gave up after {e.last_attempt.attempt_number} attempts "
            f"({sum(ev.wait_s for ev in events):.1f}s waiting); last error: {last}",
            status_code=getattr(last, "status_code", None),
        )
        _attach(err, events)
        raise err from last
    except ModelError as e:
        _attach(e, events)
        raise
    return turn.model_copy(
        update={
            "retries": events,
            "retry_wait_s": sum(ev.wait_s for ev in events),
            "latency_s": max(0.0, time.monotonic() - start - slept_real),
        }
    )


def _attach(err: ModelError, events: list[RetryEvent]) -> None:
    err.retries = list(events)
    err.retry_wait_s = sum(ev.wait_s for ev in events)
