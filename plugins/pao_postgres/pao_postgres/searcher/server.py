"""The warm searcher: a per-user background process that answers longterm searches over a socket.

Started by :func:`pao_postgres.searcher.warm.start` as ``python -m pao_postgres.searcher.server`` with
its settings on stdin (the store's URL is never in its argv). It detaches (a second
fork: the starting process never waits and no zombie stays with it), takes its lock
(one searcher per key; a loser exits), warms up (psycopg, a connection, the model, the
cells' centroids: one search), and only then binds its 0600 socket, so a client finds
either a warm searcher or none. Each request runs
:meth:`pao_postgres.backend.LongtermBackend.search_here`, exactly what the client would
run in-process. It exits after ``warm_searcher_idle_s`` without a request, on ``stop``,
on SIGTERM, or when its socket file is removed or replaced; a start that fails leaves
its one-line reason for ``pao doctor`` and keeps clients from starting another for a while.
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import socket
import sys
import threading
import time
from pathlib import Path
from typing import Any

from pao_postgres import private_socket
from pao_postgres.searcher import warm

CONCURRENT = 4
"""Requests served at once; more are refused at once (their clients search in-process)."""
READ_TIMEOUT_S = 2.0
CHECK_EVERY_S = 5.0
WARM_UP_SEARCHES = 12


class Searcher:
    def __init__(self, spec: dict[str, Any], folder: Path) -> None:
        import cattrs  # the options, as the configuration loader structures them

        from pao_postgres.backend import LongtermBackend  # after the fork and the lock: a loser exits light
        from pao_postgres.options import LongtermOptions  # after the fork and the lock: a loser exits light

        self.key, self.files = spec["key"], warm.paths(folder, spec["key"])
        converter = cattrs.Converter()
        converter.register_structure_hook(Path, lambda value, _: Path(value))
        self.options = converter.structure(spec["options"], LongtermOptions)
        self.backend = LongtermBackend(spec["name"], self.options, Path(spec["home"]))
        if warm.store_key(self.options, self.backend.home, self.backend.name) != self.key:
            raise RuntimeError("settings changed between the request and the start")
        self.started, self.last, self.searches = time.time(), time.monotonic(), 0
        self.slots = threading.BoundedSemaphore(CONCURRENT)
        self.stopping = threading.Event()
        self.wake_up, self.waker = os.pipe()  # a stop request ends the wait for connections at once
        self.listener: socket.socket | None = None

    def warm_up(self) -> None:
        """Searches (no memory file) that import, connect, load the model and the centroids, and
        run each statement often enough on each kept connection for psycopg to prepare it
        (``prepare_threshold``): the first asker gets what the hundredth does."""
        for _ in range(WARM_UP_SEARCHES):
            self.backend.search_here("warm up the searcher", 1, time.monotonic() + 60, None)

    def bind(self) -> None:
        self.listener, self.inode = private_socket.bind(self.files["sock"])  # a stale one replaced: the lock is ours

    def serve(self) -> None:
        assert self.listener is not None
        idle = self.options.warm_searcher_idle_s
        self.last = time.monotonic()  # idle from when it listens: its warm-up served nobody
        with selectors.DefaultSelector() as selector:
            selector.register(self.listener, selectors.EVENT_READ)
            selector.register(self.wake_up, selectors.EVENT_READ)
            while not self.stopping.is_set():
                wait = min(CHECK_EVERY_S, max(0.0, self.last + idle - time.monotonic()))  # it exits when idle is up
                if any(key.fileobj is self.listener for key, _ in selector.select(timeout=wait)):
                    connection, _ = self.listener.accept()
                    self.last = time.monotonic()
                    threading.Thread(target=self.handle, args=(connection,), daemon=True).start()
                elif time.monotonic() - self.last >= idle or not self.owns_socket():
                    break
        for _ in range(CONCURRENT):  # requests under way finish (and a stop request's answer leaves) first
            self.slots.acquire(timeout=READ_TIMEOUT_S)

    def owns_socket(self) -> bool:
        try:
            return os.stat(self.files["sock"]).st_ino == self.inode
        except OSError:
            return False

    def handle(self, connection: socket.socket) -> None:
        with connection:
            if warm.peer_uid(connection) != os.getuid():
                return  # another user's process: no answer at all
            if not self.slots.acquire(blocking=False):
                self.reply(connection, {"busy": True})
                return
            try:
                request = json.loads(warm.read_line(connection, time.monotonic() + READ_TIMEOUT_S))
                try:
                    answer = self.answer(request)
                except Exception as exc:  # noqa: BLE001 - a bad request or a fault: that asker searches in-process
                    answer = {"failed": type(exc).__name__}
                self.reply(connection, answer)
            except (OSError, ValueError):
                return
            finally:
                self.last = time.monotonic()
                self.slots.release()
                if self.stopping.is_set():
                    os.write(self.waker, b"x")  # after the reply: the asker hears it before the exit

    def answer(self, request: dict[str, Any]) -> dict[str, Any]:
        if request.get("protocol") != warm.PROTOCOL:
            return {"refused": "protocol"}
        if request.get("op") == "stop" and self.key.startswith(str(request.get("key_prefix") or "-")):
            self.stopping.set()
            return {"stopping": True, "pid": os.getpid()}
        if request.get("key") != self.key:
            return {"refused": "other settings"}
        if request.get("op") == "status":
            return {"pid": os.getpid(), "started": self.started, "searches": self.searches,
                    "idle_s": self.options.warm_searcher_idle_s}
        if request.get("op") != "search":
            return {"refused": "unknown request"}
        from pao_postgres.errors import LongtermError  # with the searches: the server's first import stays light

        deadline = time.monotonic() + float(request["budget"])
        file = Path(request["memory_file"]) if request.get("memory_file") else None
        try:
            items = self.backend.search_here(str(request["query"]), int(request["limit"]), deadline, file)
        except LongtermError as exc:
            return {"error": str(exc)}
        self.searches += 1
        return {"items": [warm.item_json(item) for item in items], "note": getattr(items, "note", None)}

    @staticmethod
    def reply(connection: socket.socket, message: dict[str, Any]) -> None:
        connection.settimeout(READ_TIMEOUT_S)
        connection.sendall(json.dumps(message).encode() + b"\n")

    def close(self) -> None:
        """The searcher's close step: its socket, then its backend's connections."""
        self.backend.close()
        if self.listener is not None:
            if self.owns_socket():
                with contextlib.suppress(OSError):
                    os.unlink(self.files["sock"])
            self.listener.close()


def run(spec: dict[str, Any]) -> int:
    folder = warm.private_dir()
    if folder is None:
        return 1
    files = warm.paths(folder, spec["key"])
    lock = private_socket.take_lock(files["lock"])  # held as long as this process
    if lock is None:
        return 0  # another searcher of this key runs or starts
    searcher = None
    try:
        searcher = Searcher(spec, folder)
        searcher.warm_up()
        searcher.bind()
        files["error"].unlink(missing_ok=True)
        warm.sweep(folder, spec["key"])  # what searchers of earlier settings or code left behind
    except Exception as exc:  # noqa: BLE001 - any failure to start is reported the same way
        private_socket.record_failure(files["error"], exc)
        if searcher is not None:
            searcher.close()
        return 1
    try:
        searcher.serve()
    finally:
        searcher.close()
    return 0


def main() -> int:
    spec = json.loads(sys.stdin.buffer.read() or b"{}")
    if "key" not in spec:
        return 2
    private_socket.detach()
    return run(spec)


if __name__ == "__main__":
    sys.exit(main())
