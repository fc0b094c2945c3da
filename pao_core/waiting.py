"""Waiting, written once: a call on a daemon thread under a deadline, and a poll with backoff.

A daemon thread rather than an executor: a call that hangs (a store that never answers,
a CLI that never exits) costs its deadline and nothing more, and the process can still
exit (a ``ThreadPoolExecutor`` would join the hung worker at interpreter exit).
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Callable, TypeVar

if TYPE_CHECKING:
    from concurrent.futures import Future

T = TypeVar("T")


class Late(TimeoutError):
    """A bounded call did not finish in time."""


def start(call: Callable[[], T], *, name: str = "pao-bounded") -> Future[T]:
    """Run ``call()`` on a daemon thread; its result or exception lands in the returned future."""
    from concurrent.futures import Future  # with logging: only a bounded call needs it (doctor's module is a plugin's)

    future: Future[T] = Future()

    def run() -> None:
        if not future.set_running_or_notify_cancel():
            return
        try:
            future.set_result(call())
        except BaseException as exc:  # handed to whoever waits on the future
            future.set_exception(exc)

    threading.Thread(target=run, name=name, daemon=True).start()
    return future


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
