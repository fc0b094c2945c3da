"""The warm brief server: a per-user background process that runs ``pao brief`` for new ``pao`` processes.

Started by :func:`pao_postgres.warm_brief.start` as ``python -m pao_postgres.warm_brief_server KEY`` with
the environment of the ``pao brief`` that started it. It detaches (a second fork, its own session, stdio
on the null device), checks that ``KEY`` is still its own, takes its lock (one server per key; a loser
exits), reads the configuration (``[warm_brief] enabled = false``: it marks its key off and exits),
warms up (one brief: every module, the model), and only then binds its 0600 socket, so a client finds a
warm server or none. Requests are served one at a time: each is ``pao_core.cli.main(argv)`` in the
client's folder with stdout and stderr captured in the client's encodings, which is what the client's
own process would print. It exits after ``[warm_brief] idle_s`` without a request, on ``stop``, on
SIGTERM, when its socket is removed or replaced, when its key no longer holds (the configuration file,
the plugin index or PAO_HOME changed or went away) and when a module it loaded changed on disk.
"""

from __future__ import annotations

import binascii
import contextlib
import io
import json
import os
import selectors
import sys
import time
from pathlib import Path
from typing import Any

from pao_core.plugin_index import loaded_files
from pao_postgres import private_socket, warm_brief

CHECK_EVERY_S = 2.0
"""How often an idle server checks that its key, socket and code still hold."""
READ_TIMEOUT_S = 2.0
WARM_UP_TOPIC = "warm up the brief server"


class BriefServer:
    def __init__(self, key: str, folder: Path, idle_s: int, environ: dict[str, str]) -> None:
        self.key, self.files, self.idle_s, self.environ = key, warm_brief.paths(folder, key), idle_s, environ
        self.started, self.last, self.briefs = time.time(), time.monotonic(), 0
        self.code: list[list[Any]] = []
        self.modules = 0
        self.listener: Any = None
        self.inode = 0

    def warm_up(self) -> None:
        """One brief whose output goes nowhere: every module it needs is imported and the model loaded."""
        self.run(["brief", WARM_UP_TOPIC], "/", {"stdout": ["utf-8", "replace"], "stderr": ["utf-8", "replace"]})
        self.code, self.modules = loaded_files(), len(sys.modules)

    def bind(self) -> None:
        self.listener, self.inode = private_socket.bind(self.files["sock"])  # a stale one replaced: the lock is ours

    def holds(self) -> bool:
        """Whether this server may go on: not idle too long, its socket, its key and its code unchanged."""
        try:
            owns_socket = os.stat(self.files["sock"]).st_ino == self.inode
        except OSError:
            owns_socket = False
        return (owns_socket and time.monotonic() - self.last < self.idle_s
                and warm_brief.server_key(self.environ) == self.key and self.code_holds())

    def code_holds(self) -> bool:
        """Whether every module file this server loaded is as it was (pao upgraded or edited: it must not answer)."""
        try:
            return all([(found := os.stat(path)).st_mtime_ns, found.st_size] == status for path, *status in self.code)
        except OSError:  # a module file gone
            return False

    def serve(self) -> None:
        with selectors.DefaultSelector() as selector:
            selector.register(self.listener, selectors.EVENT_READ)
            while True:
                if selector.select(timeout=CHECK_EVERY_S):
                    connection, _ = self.listener.accept()
                    with connection:
                        stop = self.handle(connection)
                    self.last = time.monotonic()
                    if stop:
                        return
                elif not self.holds():
                    return

    def handle(self, connection: Any) -> bool:
        """Answer one request; True when the server is to stop."""
        if private_socket.peer_uid(connection) != os.getuid():
            return False  # another user's process: no answer at all
        try:
            request = json.loads(private_socket.read_line(connection, time.monotonic() + READ_TIMEOUT_S))
        except (OSError, ValueError):
            return False
        reply, stop = self.answer(request if isinstance(request, dict) else {})
        with contextlib.suppress(OSError):  # the client gave up (its bound passed): it briefs in-process
            connection.settimeout(READ_TIMEOUT_S)
            connection.sendall(json.dumps(reply).encode() + b"\n")
        if len(sys.modules) != self.modules:  # after the answer: what the brief imported is watched too (only that:
            known = {path for path, *_ in self.code}  # a file already watched keeps the state it had when loaded)
            self.code += [entry for entry in loaded_files() if entry[0] not in known]
            self.modules = len(sys.modules)
        return stop

    def answer(self, request: dict[str, Any]) -> tuple[dict[str, Any], bool]:
        if request.get("protocol") != warm_brief.PROTOCOL:
            return {"refused": "protocol"}, False
        if request.get("op") == "status":  # the user's own process (peer checked): which server this is
            return {"pid": os.getpid(), "started": self.started, "briefs": self.briefs, "idle_s": self.idle_s}, False
        if request.get("op") == "stop":
            return {"stopping": True, "pid": os.getpid(), "briefs": self.briefs}, True
        if request.get("key") != self.key:
            return {"refused": "other settings"}, False
        if not self.code_holds():
            return {"refused": "pao's code changed"}, True
        argv = [str(argument) for argument in request.get("argv") or ()]
        if not warm_brief.served(argv):
            return {"refused": "not a command this server answers"}, False
        try:
            code, out, err = self.run(argv, str(request["cwd"]), request["streams"])
        except Exception as exc:  # noqa: BLE001 - a bad request or a fault: that client briefs in-process
            return {"failed": type(exc).__name__}, False
        self.briefs += 1
        return {"code": code, "stdout": _text(out), "stderr": _text(err)}, False

    @staticmethod
    def run(argv: list[str], cwd: str, streams: dict[str, list[str]]) -> tuple[int, bytes, bytes]:
        """``pao ARGV`` in ``cwd`` as a new process would run it: its exit code and the bytes it printed."""
        from pao_core.cli import main  # loaded already: the configuration was read with it

        os.chdir(cwd)
        captured = {name: io.TextIOWrapper(io.BytesIO(), encoding=streams[name][0], errors=streams[name][1],
                                           write_through=True) for name in ("stdout", "stderr")}
        saved = sys.stdout, sys.stderr
        sys.stdout, sys.stderr = captured["stdout"], captured["stderr"]
        try:
            try:
                code = main(argv)
            except SystemExit as leaving:  # as pao_core.cli.run ends the process
                code = leaving.code if isinstance(leaving.code, int) else int(leaving.code is not None)
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            sys.stdout, sys.stderr = saved
        return code, *(captured[name].buffer.getvalue() for name in ("stdout", "stderr"))  # type: ignore[attr-defined]

    def close(self) -> None:
        if self.listener is not None:
            with contextlib.suppress(OSError):
                if os.stat(self.files["sock"]).st_ino == self.inode:
                    os.unlink(self.files["sock"])
            self.listener.close()


def _text(data: bytes) -> str:
    return binascii.b2a_base64(data, newline=False).decode("ascii")


def ready(key: str, folder: Path, environ: dict[str, str]) -> BriefServer | None:
    """The server of ``key``, warm and listening; None when the configuration turns it off."""
    from pao_core.plugins import load_config  # the plugins and the configuration: after the fork and the lock
    from pao_postgres.options import WarmBriefOptions

    options = load_config().options("warm_brief", "", WarmBriefOptions)
    if not options.enabled:
        return None
    server = BriefServer(key, folder, options.idle_s, environ)
    server.warm_up()
    server.bind()
    return server


def run(key: str) -> int:
    environ = dict(os.environ)  # as the client had it (the model's loader sets variables of its own)
    folder = private_socket.private_dir()
    if folder is None or warm_brief.off(environ) or warm_brief.server_key(environ) != key:
        return 1  # the settings changed since the request: the next brief asks for the new key's server
    files = warm_brief.paths(folder, key)
    lock = private_socket.take_lock(files["lock"])  # held as long as this process
    if lock is None or private_socket.held(folder, "wb") > warm_brief.MAX_SERVERS:
        return 0  # another server of this key runs or starts, or as many of other keys as may run
    try:
        server = ready(key, folder, environ)
    except Exception as exc:  # noqa: BLE001 - any failure to start is reported the same way
        private_socket.record_failure(files["error"], exc)
        return 1
    if server is None:
        private_socket.touch(files["off"])  # no client of this key starts one again
        return 0
    files["error"].unlink(missing_ok=True)
    private_socket.sweep(folder, "wb", key, warm_brief.RETRY_START_S)  # what servers of earlier settings left
    try:
        server.serve()
    finally:
        server.close()
    return 0


def main() -> int:
    if len(sys.argv) != 2:
        return 2
    sys.path[:] = json.loads(sys.stdin.buffer.read() or b"[]") or sys.path  # the client's: the plugin index holds
    private_socket.detach()
    return run(sys.argv[1])


if __name__ == "__main__":
    sys.exit(main())
