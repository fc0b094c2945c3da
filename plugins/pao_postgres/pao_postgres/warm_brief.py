"""The warm brief's client: ``pao brief`` asks a per-user background process that has pao loaded.

A new ``pao brief`` process spends most of its time starting: importing pao's plugin host, its
configuration and the stores' modules, and the sentence model. The brief itself takes a tenth of
that. So pao-postgres declares :func:`answer` as the ``brief`` command's shortcut (``pao_shortcuts``):
the ``pao`` command calls it before it loads anything else, and it hands the command line to a warm
brief server (:mod:`pao_postgres.warm_brief_server`), which runs ``pao brief`` as this process would
and sends back the bytes it printed and its exit code. This module imports the standard library only.

- **Never needed.** With no server, a refused request, an error or no answer in time
  (:data:`CONNECT_S` to connect, :data:`ANSWER_S` to answer), it returns ``None`` and ``pao brief``
  runs in this process as always, printing the same bytes.
- **Never stale.** The socket's name is a digest of everything the answer depends on besides the
  stores' data (read afresh by every brief): the interpreter, the uid and umask, the environment
  (all of it, but what a shell changes between commands), ``sys.path``, the configuration file's and the plugin
  index's identity (path, inode, size, times) and whether PAO_HOME exists. The server answers its own
  key only, and a server whose code changed since it started refuses and exits.
- **Private.** :mod:`pao_postgres.private_socket`: a 0700 folder of the user's, a 0600 socket, the
  other end's uid checked from the kernel on both ends.
- **On demand.** A ``pao brief`` that found none starts one as it exits (detached, no terminal, none of
  its pipes), unless ``[warm_brief] enabled = false`` (the server records that for its key and exits) or
  ``PAO_WARM_BRIEF=0``; it exits after ``[warm_brief] idle_s`` without a request.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Mapping, Sequence

from pao_postgres import private_socket

PROTOCOL = 1
ENV = "PAO_WARM_BRIEF"
"""``0`` (or ``false``, ``no``, ``off``): no warm brief, whatever the configuration says."""
CONNECT_S = 0.05
"""How long a ``pao brief`` waits to connect before it briefs in-process (a live server accepts at once)."""
ANSWER_S = 3.0
"""How long it waits for the answer (a brief's stores have 2 s by default) before it briefs in-process."""
RETRY_START_S = 300.0
"""A server that failed to start is not started again for this long (its reason is kept)."""
MAX_SERVERS = 4
"""At most this many servers of one user run at once (one per key, each ~100-200 MB): a fifth key briefs in-process."""
VOLATILE = frozenset({"PWD", "OLDPWD", "_", "SHLVL"})
"""What a shell changes from one command to the next: not part of the key (the cwd goes with each request)."""
SERVED_OPTIONS = ("--json", "--raw-unredacted", "--folder")
"""``pao brief``'s options a server answers; any other (``--write``, ``--help``, a value that starts with ``-``)
runs in-process."""


def off(environ: Mapping[str, str]) -> bool:
    return environ.get(ENV, "").strip().lower() in ("0", "false", "no", "off")


def served(argv: Sequence[str]) -> bool:
    """Whether a server may answer this command line: ``brief`` with its topic and read-only options."""
    if not argv or argv[0] != "brief":
        return False
    follows_folder = False
    for argument in argv[1:]:
        if argument.startswith("-") and not (argument in SERVED_OPTIONS or argument.startswith("--folder=")):
            return False
        follows_folder = argument == "--folder"
    return not follows_folder


def _identity(path: str) -> list[Any] | None:
    try:
        status = os.stat(path)
    except OSError:
        return None
    return [path, status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns, status.st_ctime_ns]


def server_key(environ: Mapping[str, str]) -> str:
    """The digest naming the server that may answer this process (see the module's docstring)."""
    from pao_core.paths import config_path, home_path  # loaded already by the pao command
    from pao_core.plugin_index import cache_file  # likewise

    umask = os.umask(0o077)
    os.umask(umask)
    material = [PROTOCOL, sys.executable, sys.path, os.getuid(), umask,
                sorted((name, value) for name, value in environ.items() if name not in VOLATILE),
                _identity(str(config_path(environ))), _identity(cache_file()),
                os.path.isdir(home_path(environ))]
    try:
        from _blake2 import blake2b  # the C module: hashlib's import costs more than this whole key
    except ImportError:
        from hashlib import blake2b  # a Python built without it: the same function, slower to import
    return blake2b(json.dumps(material).encode(), digest_size=16).hexdigest()


def paths(folder: Path, key: str) -> dict[str, Path]:
    """The server's files: its socket, lock (holding its pid), start error and the mark of a key turned off."""
    stem = folder / f"wb-{key[:20]}"
    return {part: stem.with_suffix("." + part) for part in ("sock", "lock", "error", "off")}


def answer(argv: Sequence[str]) -> int | None:
    """``pao brief``'s shortcut: print what the server answers and return its exit code; None to brief here."""
    if off(os.environ) or not served(argv):
        return None
    folder = private_socket.private_dir()
    if folder is None:
        return None
    key = server_key(os.environ)
    files = paths(folder, key)
    streams = {"stdout": [sys.stdout.encoding, sys.stdout.errors], "stderr": [sys.stderr.encoding, sys.stderr.errors]}
    request = {"protocol": PROTOCOL, "key": key, "argv": list(argv), "cwd": os.getcwd(), "streams": streams}
    now = time.monotonic()
    try:
        reply = private_socket.ask(files["sock"], request, now + ANSWER_S, connect_by=now + CONNECT_S)
    except (OSError, ValueError):  # broken, killed mid-request, or slow: in-process, as always
        return None
    if reply is None:
        if not os.path.exists(files["off"]) and not private_socket.recent(files["error"], RETRY_START_S):
            import atexit  # only a process that starts one

            atexit.register(start, key)  # as this process exits: its own brief keeps both cores
        return None
    return _print(reply)


def _print(reply: dict[str, Any]) -> int | None:
    import binascii  # the answer's bytes travel as base64

    try:
        code, out, err = int(reply["code"]), binascii.a2b_base64(reply["stdout"]), binascii.a2b_base64(reply["stderr"])
    except (KeyError, TypeError, ValueError, binascii.Error):
        return None  # refused (another key, changed code, busy) or unreadable: in-process
    try:
        for stream, data in ((sys.stdout, out), (sys.stderr, err)):
            stream.flush()
            stream.buffer.write(data)
            stream.flush()
    except BrokenPipeError:  # `pao brief TOPIC | head -1`: as the command itself ends then
        from pao_core.output import end_output  # loaded already by the pao command

        return end_output(141)
    return code


def start(key: str) -> None:
    """Start the server of ``key`` in the background (it takes its lock, or exits when one runs); never waits."""
    import subprocess  # only when starting one

    try:
        starter = subprocess.Popen([sys.executable, "-m", "pao_postgres.warm_brief_server", key], stdin=subprocess.PIPE,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, close_fds=True,
                                   start_new_session=True, cwd="/")
        with starter.stdin:  # type: ignore[union-attr]
            starter.stdin.write(json.dumps(sys.path).encode())  # type: ignore[union-attr]  # the plugin index's key
    except OSError:
        pass


def servers(deadline: float, op: str = "status") -> dict[Path, dict[str, Any] | None]:
    """Every warm brief server of this user (any key) by socket, with its answer to ``op`` (``status``: pid,
    started, briefs, idle_s; ``stop``: it exits); None for a socket nobody answers on."""
    folder = private_socket.private_dir()
    found: dict[Path, dict[str, Any] | None] = {}
    for socket_path in sorted(folder.glob("wb-*.sock")) if folder else ():
        try:
            found[socket_path] = private_socket.ask(socket_path, {"protocol": PROTOCOL, "op": op}, deadline)
        except (OSError, ValueError):
            found[socket_path] = None
    return found


def describe(enabled: bool, deadline: float) -> str:
    """One line for ``pao doctor``: whether a warm brief server answers this environment's ``pao brief``."""
    if off(os.environ):
        return f"off ({ENV}=0)"
    if not enabled:
        return "off ([warm_brief] enabled = false)"
    folder = private_socket.private_dir()
    if folder is None:
        return f"not used ({private_socket.runtime_dir()} must be a folder of yours that only you can enter: 0700)"
    key = server_key(os.environ)
    try:
        found = private_socket.ask(paths(folder, key)["sock"], {"protocol": PROTOCOL, "op": "status"}, deadline)
    except (OSError, ValueError):
        return "running but not answering (pao brief runs in its own process)"
    if found is not None and "pid" in found:
        return f"running (pid {found['pid']}, {found['briefs']} briefs, exits after {found['idle_s'] // 60} min idle)"
    others = sorted(status["pid"] for status in servers(deadline).values() if status and "pid" in status)
    if others:  # of other environments or settings (this process's own may differ: the model's loader sets some)
        return f"running for other environments or settings (pid {', '.join(map(str, others))})"
    error = paths(folder, key)["error"]
    reason = error.read_text(errors="replace").strip() if private_socket.recent(error, RETRY_START_S) else ""
    return "not running" + (f" (last start failed: {reason})" if reason else " (the next pao brief starts one)")
