"""The user's terminal in tests: a pane of a tmux server of its own (a private socket), running ``sh``.

``pao attach`` runs there as a user would type it; the test reads the pane and types keys
into it (``send-keys`` reaches the pane's program, not this server's own key bindings)."""

from __future__ import annotations

import contextlib
import os
import subprocess
import uuid
from typing import Callable, Iterator

Tmux = Callable[..., "subprocess.CompletedProcess[str]"]


@contextlib.contextmanager
def user_terminal(width: int = 100, height: int = 30) -> Iterator[Tmux]:
    """``tmux(*args)`` on a server with one session ``user`` of ``width`` x ``height``, ended afterwards."""
    socket = f"pao-terminal-{os.getpid()}-{uuid.uuid4().hex[:6]}"

    def tmux(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["tmux", "-L", socket, *args], capture_output=True, text=True, check=False)

    started = tmux("-f", "/dev/null", "new-session", "-d", "-s", "user", "-x", str(width), "-y", str(height), "sh")
    assert started.returncode == 0, started.stderr
    try:
        yield tmux
    finally:
        tmux("kill-server")
