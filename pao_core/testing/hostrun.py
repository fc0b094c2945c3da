"""Running a real coding-agent CLI under test: the loopback-only check, the pinned binaries, private tmux.

Real CLIs call public hosts at start-up (update checks, statistics), so as root they
run only inside a loopback-only network namespace (``scripts/test`` enters one with
``unshare --net``); :func:`loopback_only_problem` says when that is not the case and
the tests fail on it. :class:`PrivateTmux` drives a tmux server on a socket of its
own, the way pao's driver does: bracketed paste from a buffer, then the submit key.
"""

from __future__ import annotations

import itertools
import os
import re
import signal
import subprocess
import time
from pathlib import Path
from typing import Callable, Mapping, Sequence

import attrs

ROOT = Path(__file__).resolve().parents[2]
_sockets = itertools.count(1)


def loopback_only_problem() -> str | None:
    """Why a real CLI must not run here (root with a network beyond ``lo``), or ``None``."""
    if os.geteuid() != 0:
        return None
    interfaces = network_interfaces()
    if interfaces == ["lo"]:
        return None
    return (
        f"running as root with network interfaces {interfaces}: real CLIs run only in a loopback-only "
        "namespace (use scripts/test, or: unshare --net -- sh -c 'ip link set lo up && .venv/bin/python -m pytest ...')"
    )


def fail_unless_loopback_only() -> None:
    """In a test: fail (never skip) when a real CLI must not run here."""
    problem = loopback_only_problem()
    if problem:
        import pytest

        pytest.fail(problem)


def network_interfaces() -> list[str]:
    """This process's network interfaces.

    Read from ``/proc/self/net/dev``, which follows the process's network namespace;
    ``/sys/class/net`` keeps listing the host's interfaces after ``unshare --net``
    unless sysfs is mounted again.
    """
    lines = Path("/proc/self/net/dev").read_text().splitlines()[2:]
    return sorted(line.split(":", 1)[0].strip() for line in lines if ":" in line)


def pinned_versions(variable: str) -> list[str]:
    """The versions ``scripts/pins.sh`` pins in ``variable`` (the environment wins, as in the script)."""
    if variable in os.environ:
        return os.environ[variable].split()
    match = re.search(rf'^{variable}="\$\{{{variable}-([^}}]*)\}}"', (ROOT / "scripts" / "pins.sh").read_text(), re.M)
    return match[1].split() if match else []


def pinned_cli(name: str, binary: str, variable: str) -> Path | None:
    """The newest pinned install of a CLI under ``.cache/NAME/VERSION/`` (``None``: not pinned)."""
    versions = pinned_versions(variable)
    return ROOT / ".cache" / name / versions[0] / "node_modules" / ".bin" / binary if versions else None


@attrs.define
class PrivateTmux:
    """A tmux server of our own (``-L pao-test-<pid>-<n>``) running one program per window."""

    env: Mapping[str, str]
    width: int = 120
    height: int = 40
    socket: str = attrs.field(factory=lambda: f"pao-test-{os.getpid()}-{next(_sockets)}")

    def tmux(self, *args: str, stdin: str | None = None) -> str:
        done = subprocess.run(
            ["tmux", "-L", self.socket, *args], input=stdin, capture_output=True, text=True,
            env=dict(self.env), timeout=20, check=False,
        )
        if done.returncode != 0:
            raise RuntimeError(f"tmux {args[0]} failed: {done.stderr.strip()}")
        return done.stdout

    def start(self, folder: str | os.PathLike[str], command: Sequence[str]) -> str:
        """Start ``command`` in ``folder``; return the pane id."""
        size = ["-x", str(self.width), "-y", str(self.height)]
        out = self.tmux("new-session", "-d", "-P", "-F", "#{pane_id}", *size, "-c", str(folder), "--", *command)
        return out.strip()

    def read(self, pane: str) -> str:
        return self.tmux("capture-pane", "-p", "-t", pane)

    def paste(self, pane: str, text: str) -> None:
        self.tmux("load-buffer", "-b", "pao-test", "-", stdin=text)
        self.tmux("paste-buffer", "-p", "-d", "-b", "pao-test", "-t", pane)

    def press(self, pane: str, key: str) -> None:
        self.tmux("send-keys", "-t", pane, key)

    def close(self) -> None:
        """End every program (process groups: some CLIs outlive the hang-up tmux sends) and the server."""
        try:
            pids = self.tmux("list-panes", "-a", "-F", "#{pane_pid}").split()
        except RuntimeError:
            return
        for pid in pids:
            _end_group(int(pid))
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True, env=dict(self.env), check=False)


def _end_group(pid: int) -> None:
    try:
        group = os.getpgid(pid)
    except ProcessLookupError:
        return
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(group, sig)
        except ProcessLookupError:
            return
        give_up = time.monotonic() + 3
        while time.monotonic() < give_up:
            try:
                os.killpg(group, 0)
            except ProcessLookupError:
                return
            time.sleep(0.05)


@attrs.frozen
class Frame:
    """One distinct screen seen while polling, with its verdict and when it appeared."""

    at: float
    state: str
    reason: str | None
    screen: str


def watch(read: Callable[[], str], classify: Callable[[str], tuple[str, str | None]],
          until: Callable[[str], bool], timeout: float) -> list[Frame]:
    """Read the screen every 20 ms until ``until(state)`` or ``timeout``; return every distinct frame."""
    started = time.monotonic()
    frames: list[Frame] = []
    while True:
        screen = read()
        if not frames or frames[-1].screen != screen:
            state, reason = classify(screen)
            frames.append(Frame(time.monotonic() - started, state, reason, screen))
            if until(state):
                return frames
        if time.monotonic() - started > timeout:
            return frames
        time.sleep(0.02)
