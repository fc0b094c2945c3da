"""Work that runs in a forked child process while the ``pao`` command does something else.

``pao spawn`` gathers memory (numpy, the model, both stores: about 0.1 s of CPU in a new
process) while it also checks the host and the terminal, reserves the agent's name and
opens the agent's window. The two do not depend on each other, but threads of one
process take turns on the interpreter lock; a forked child runs on another core. The
child does the work, writes its pickled result to a pipe and ends with ``os._exit`` (no
atexit handler, no flush of the parent's buffers).

A :class:`Helper` is forked earlier still, before the work is known: it prepares at once
(imports what its work will need) and then runs, in order, the pieces of work the
parent sends it, pickled (a ``functools.partial`` of a module-level function). What a
piece of work raises is raised again in the parent.

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
import struct
import sys
import threading
import time
from typing import Callable, Generic, NoReturn, TypeVar

T = TypeVar("T")
_SIZE = struct.Struct("!Q")
ORDER_LIMIT = 1 << 15
"""Bytes of pickled work sent to a helper at most: a pipe takes that much while the helper still prepares."""


class Forked(Generic[T]):
    """``work()`` running in a child process (or not started yet, where no child is used)."""

    def __init__(self, work: Callable[[], T], pid: int | None = None, fd: int | None = None,
                 helper: Helper | None = None) -> None:
        self.work = work
        self.pid = pid
        self.fd = fd
        self.helper = helper
        """The helper that runs the work (it goes on after the result, for the next piece); ``None``: a child of its own."""

    def result(self, timeout: float) -> T:
        """The child's result within ``timeout`` seconds (what the work raised there is raised here);
        otherwise ``work()`` done here."""
        if self.pid is None:
            return self.work()
        data = _read_message(self.fd, time.monotonic() + timeout)  # type: ignore[arg-type]
        if self.helper is None or data is None:
            self.cancel()  # a helper late or gone has nothing more to give
        self.pid = self.fd = None
        try:
            done, value = pickle.loads(data) if data else (None, None)
        except Exception:  # a truncated or unreadable answer: the child died mid-write
            done, value = None, None
        if done is None:
            return self.work()
        if not done:
            raise value
        return value

    def cancel(self) -> None:
        """End the child (a helper: with whatever else it would do) and reap it; safe to call more than once."""
        pid, fd, self.pid, self.fd = self.pid, self.fd, None, None
        if self.helper is not None:
            self.helper.cancel()
        elif pid is not None:
            _end(pid, fd)


class Helper:
    """A forked child that prepared for its work and runs each piece sent to it (:func:`helper`)."""

    def __init__(self, pid: int, orders: int, results: int) -> None:
        self.pid: int | None = pid
        self.orders = orders
        self.results = results
        # a search's thread that gives the helper up and pao's exit may both end it: the second waits for the first,
        # so the pipes close once, and the process does not exit (freezing that thread) before the helper is ended
        self._ending = threading.Lock()

    def run(self, work: Callable[[], T]) -> Forked[T] | None:
        """``work`` sent to the helper; ``None`` when it cannot be (the helper ended, the work does not pickle)."""
        try:
            data = pickle.dumps(work)
        except Exception:  # noqa: BLE001 - a closure or an open resource: the caller runs it another way
            return None
        if self.pid is None or len(data) > ORDER_LIMIT:
            return None
        try:
            os.write(self.orders, _SIZE.pack(len(data)) + data)
        except OSError:  # the helper is gone
            self.cancel()
            return None
        return Forked(work, self.pid, self.results, helper=self)

    def cancel(self) -> None:
        """End the helper and reap it; safe to call more than once, from any thread."""
        with self._ending:
            pid, self.pid = self.pid, None
            if pid is not None:
                os.close(self.orders)
                _end(pid, self.results)


def _end(pid: int | None, fd: int | None) -> None:
    if fd is not None:
        os.close(fd)
    if pid is not None:
        try:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        except (ProcessLookupError, ChildProcessError):  # gone, or another process's child (inherited by a fork)
            pass


def _read_exactly(fd: int, size: int, deadline: float | None) -> bytes | None:
    chunks, left = [], size
    while left:
        remaining = None if deadline is None else deadline - time.monotonic()
        if remaining is not None and (remaining <= 0 or not select.select([fd], [], [], remaining)[0]):
            return None  # late: the work is done here instead
        chunk = os.read(fd, min(left, 1 << 16))
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _read_message(fd: int, deadline: float | None) -> bytes | None:
    header = _read_exactly(fd, _SIZE.size, deadline)
    return None if header is None else _read_exactly(fd, _SIZE.unpack(header)[0], deadline)


def _flushed() -> None:
    for stream in (sys.stdout, sys.stderr):  # the child must not write out the parent's buffered text again
        try:
            stream.flush()
        except (AttributeError, OSError, ValueError):  # none, closed or broken: nothing buffered to repeat
            pass


def start(work: Callable[[], T]) -> Forked[T]:
    """``work()`` started in a forked child on Linux; elsewhere it runs when its result is asked for."""
    if sys.platform != "linux":
        return Forked(work)
    _flushed()
    read_fd, write_fd = os.pipe()
    try:
        pid = os.fork()
    except OSError:
        os.close(read_fd)
        os.close(write_fd)
        return Forked(work)
    if pid == 0:  # the child
        os.close(read_fd)
        _child(lambda: _answer(work, write_fd))
    os.close(write_fd)
    return Forked(work, pid, read_fd)


def helper(prepare: Callable[[], object]) -> Helper | None:
    """A child forked now (Linux only, else ``None``) that runs ``prepare()``, then each piece of work it is sent.

    The helper's output goes nowhere (it would outlive a command that ends early, and hold
    its caller's pipes open); it ends when its owner cancels it or goes away.
    """
    if sys.platform != "linux":
        return None
    _flushed()
    orders_read, orders_write = os.pipe()
    results_read, results_write = os.pipe()
    try:
        pid = os.fork()
    except OSError:
        for fd in (orders_read, orders_write, results_read, results_write):
            os.close(fd)
        return None
    if pid == 0:  # the child
        os.close(orders_write)
        os.close(results_read)
        _child(lambda: _serve(prepare, orders_read, results_write), quiet=True)
    os.close(orders_read)
    os.close(results_write)
    return Helper(pid, orders_write, results_read)


def _serve(prepare: Callable[[], object], orders: int, results: int) -> None:
    try:
        prepare()
    except Exception:  # noqa: BLE001 - preparing only saves time: the work imports what it needs anyway
        pass
    while (order := _read_message(orders, None)) is not None:
        _answer(pickle.loads(order), results)


def _answer(work: Callable[[], object], fd: int) -> None:
    try:
        data = pickle.dumps((True, work()))
    except Exception as exc:  # noqa: BLE001 - raised again in the parent, when it pickles
        data = pickle.dumps((False, exc))
    view = memoryview(_SIZE.pack(len(data)) + data)
    while view:
        view = view[os.write(fd, view):]


def _child(run: Callable[[], None], *, quiet: bool = False) -> NoReturn:
    code = 1
    try:
        if quiet:
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, 1)
            os.dup2(null, 2)
        # fresh stream objects: another thread of the parent may have held the old ones' locks at the fork
        sys.stdout = os.fdopen(os.dup(1), "w", encoding="utf-8", errors="replace")
        sys.stderr = os.fdopen(os.dup(2), "w", encoding="utf-8", errors="replace")
        run()
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
