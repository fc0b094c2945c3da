"""Work that runs in a forked child process while the ``pao`` command does something else.

``pao spawn`` gathers memory (numpy, the model, both stores: about 0.1 s of CPU in a new
process) while it also checks the host and the terminal, reserves the agent's name and
opens the agent's window. The two do not depend on each other, but threads of one
process take turns on the interpreter lock; a forked child runs on another core. The
child does the work, writes its pickled result to a pipe and ends with ``os._exit`` (no
atexit handler, no flush of the parent's buffers).

Only where forking is safe and only for the ``pao`` command's own process (a library
caller's process is not forked): on Linux. Anywhere else, and whenever the child fails
(it crashed, its result would not pickle, it is far past its deadline), the work runs in
the calling process instead, so the result is the same as without a child.
"""

from __future__ import annotations

import os
import pickle
import select
import signal
import sys
import time
from typing import Callable, Generic, NoReturn, TypeVar

T = TypeVar("T")


class Forked(Generic[T]):
    """``work()`` running in a child process (or not started yet, where no child is used)."""

    def __init__(self, work: Callable[[], T], pid: int | None = None, fd: int | None = None) -> None:
        self.work = work
        self.pid = pid
        self.fd = fd

    def result(self, timeout: float) -> T:
        """The child's result within ``timeout`` seconds; otherwise ``work()`` done here."""
        if self.pid is None:
            return self.work()
        data = self._read(time.monotonic() + timeout)
        self.cancel()
        try:
            done, value = pickle.loads(data) if data else (False, None)
        except Exception:  # a truncated or unreadable answer: the child died mid-write
            done, value = False, None
        return value if done else self.work()

    def cancel(self) -> None:
        """End the child if it still runs and reap it; safe to call more than once."""
        pid, fd, self.pid, self.fd = self.pid, self.fd, None, None
        if fd is not None:
            os.close(fd)
        if pid is not None:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            os.waitpid(pid, 0)

    def _read(self, deadline: float) -> bytes:
        assert self.fd is not None
        chunks = []
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([self.fd], [], [], remaining)[0]:
                return b""  # late: the work is done here instead
            chunk = os.read(self.fd, 1 << 16)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)


def start(work: Callable[[], T]) -> Forked[T]:
    """``work()`` started in a forked child on Linux; elsewhere it runs when its result is asked for."""
    if sys.platform != "linux":
        return Forked(work)
    for stream in (sys.stdout, sys.stderr):  # the child must not write out the parent's buffered text again
        try:
            stream.flush()
        except (AttributeError, OSError, ValueError):  # none, closed or broken: nothing buffered to repeat
            pass
    read_fd, write_fd = os.pipe()
    try:
        pid = os.fork()
    except OSError:
        os.close(read_fd)
        os.close(write_fd)
        return Forked(work)
    if pid == 0:  # the child
        os.close(read_fd)
        _child(work, write_fd)
    os.close(write_fd)
    return Forked(work, pid, read_fd)


def _child(work: Callable[[], T], fd: int) -> NoReturn:
    code = 1
    try:
        # fresh stream objects: another thread of the parent may have held the old ones' locks at the fork
        sys.stdout = os.fdopen(os.dup(1), "w", encoding="utf-8", errors="replace")
        sys.stderr = os.fdopen(os.dup(2), "w", encoding="utf-8", errors="replace")
        data = pickle.dumps((True, work()))
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        code = 0
    except BaseException:  # noqa: BLE001 - whatever went wrong, the parent does the work itself
        pass
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001 - a closed or broken stream: nothing more to say
                pass
        os._exit(code)
