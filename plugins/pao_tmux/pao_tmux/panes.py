"""Targets (``SOCKET:%PANE``) and which panes of a tmux server are alive, with the standard library alone.

The driver (:mod:`pao_tmux.driver`) talks to tmux through libtmux. ``pao list`` before any
plugin loads (:mod:`pao_agents.light`) only needs to know which agents' panes are alive, and
importing libtmux costs more than that whole command (docs/benchmarks.md, start-up), so
:func:`live_panes` asks each tmux server once, read-only, with ``tmux list-panes -a``.
"""

from __future__ import annotations

import re
import shutil
import subprocess

USER_DEFAULT_SERVER = "default"
"""The socket name that means the user's own default tmux server (opt-in only)."""

SOCKET_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
PANE_ID = re.compile(r"^%[0-9]+$")
NO_SERVER = ("no server running", "error connecting", "No such file or directory", "server exited")
"""What tmux says when no server listens on the socket: every pane of it is gone."""
QUERY_SECONDS = 10.0


def split_target(target: str) -> tuple[str, str] | None:
    """``(socket, pane)`` of a target, or ``None`` when it is not one."""
    socket, _, pane = target.rpartition(":")
    return (socket, pane) if SOCKET_NAME.match(socket) and PANE_ID.match(pane) else None


def socket_args(socket: str) -> list[str]:
    """The tmux options that choose the server of ``socket``, as libtmux passes them."""
    return [] if socket == USER_DEFAULT_SERVER else [f"-L{socket}"]


def live_panes(socket: str) -> set[str] | None:
    """The ids of the panes on server ``socket`` whose process runs (``#{pane_dead}`` 0), as the driver's
    ``is_alive`` judges each one; empty when no server runs there; ``None`` when tmux could not say."""
    binary = shutil.which("tmux")
    if binary is None:
        return None
    argv = [binary, *socket_args(socket), "list-panes", "-a", "-F", "#{pane_id} #{pane_dead}"]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=QUERY_SECONDS, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return set() if any(marker in done.stderr for marker in NO_SERVER) else None
    panes = [line.split(" ") for line in done.stdout.splitlines()]
    if not all(len(fields) == 2 and PANE_ID.match(fields[0]) for fields in panes):
        return None
    return {pane for pane, dead in panes if dead == "0"}
