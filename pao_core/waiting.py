"""Waiting, written once: a call on a daemon thread under a deadline, and a poll with backoff.

A daemon thread rather than an executor: a call that hangs (a store that never answers,
a CLI that never exits) costs its deadline and nothing more, and the process can still
exit (a ``ThreadPoolExecutor`` would join the hung worker at interpreter exit).
"""

from __future__ import annotations

import threading
import time
from typing import Any, Callable, Generic, TypeVar

T = TypeVar("T")


class Late(TimeoutError):
    """A bounded call did not finish in time."""


class Outcome(Generic[T]):
    """What a call on its own thread ends with; ``result(timeout)`` waits for it as ``concurrent.futures.Future``'s
    does (whose import, logging's included, costs a new ``pao brief`` more than the wait it serves)."""

    def __init__(self) -> None:
        self._done = threading.Event()
        self._ended: tuple[bool, Any] = (False, None)

    def result(self, timeout: float | None = None) -> T:
        if not self._done.wait(timeout):
            raise TimeoutError
        returned, value = self._ended
        if not returned:
            raise value
        return value


def start(call: Callable[[], T], *, name: str = "pao-bounded") -> Outcome[T]:
    """Run ``call()`` on a daemon thread; its result or exception lands in the returned outcome."""
    outcome: Outcome[T] = Outcome()

    def run() -> None:
        try:
            outcome._ended = (True, call())
        except BaseException as exc:  # handed to whoever waits on the outcome
            outcome._ended = (False, exc)
        outcome._done.set()

    threading.Thread(target=run, name=name, daemon=True).start()
    return outcome


def bounded(call: Callable[[], T], seconds: float, *, name: str = "pao-bounded") -> T:
    """``call()``'s result; :class:`Late` after ``seconds`` (the thread is abandoned)."""
    try:
        return start(call, name=name).result(timeout=max(0.0, seconds))
    except TimeoutError:
        raise Late(f"no answer within {seconds:.1f} s") from None


def poll_until(
    probe: Callable[[], T],
    timeout: float,
    *,
    first: float = 0.005,
    cap: float = 0.1,
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """Call ``probe`` until it returns something true or ``timeout`` seconds pass; its last answer.

    The pause starts at ``first`` and doubles up to ``cap``: quick when the answer comes
    at once, cheap when it takes a while.
    """
    give_up = time.monotonic() + timeout
    delay = first
    while True:
        answer = probe()
        remaining = give_up - time.monotonic()
        if answer or remaining <= 0:
            return answer
        sleep(min(delay, remaining))
        delay = min(delay * 2, cap)
