"""Running the real Codex and Gemini CLIs under test: pinned binaries, loopback-only check, tmux.

Shares the Claude Code helpers (``claude_cli``): the loopback-only namespace check
and the private tmux server. Adds what these two CLIs need on top: any pinned CLI's
path, and ending each pane's whole process group (Gemini CLI outlives the hang-up
that closing a tmux pane sends).
"""

from __future__ import annotations

import os
import re
import signal
import time
from pathlib import Path
from typing import Callable

import attrs

from pao_testing.claude_cli import REPO_ROOT, PrivateTmux, isolation_problem
from pao_testing.heldout import heldout_versions, installed_binary


def fail_unless_loopback_only() -> None:
    """In a test: fail (never skip) when a real CLI must not run here (root outside a loopback-only namespace)."""
    problem = isolation_problem()
    if problem:
        import pytest  # loads pytest on use: start-up stays light

        pytest.fail(problem, pytrace=False)


def pinned_versions(variable: str) -> list[str]:
    """The versions ``scripts/pins.sh`` pins in ``variable`` (the environment wins, as in the script); the held-out
    ones ``PAO_HELDOUT_CLIS`` names instead, when it names any of this CLI (:mod:`pao_testing.heldout`)."""
    heldout = heldout_versions(variable.removeprefix("PAO_").removesuffix("_VERSIONS").lower())
    if heldout:
        return heldout
    if variable in os.environ:
        return os.environ[variable].split()
    text = (REPO_ROOT / "scripts" / "pins.sh").read_text(encoding="utf-8")
    match = re.search(rf'^{variable}="\$\{{{variable}-([^}}]*)\}}"', text, re.M)
    return match[1].split() if match else []


def pinned_cli(name: str, binary: str, variable: str) -> Path | None:
    """The first pinned (or held-out) install of a CLI under ``.cache/NAME/VERSION/`` (``None``: none pinned)."""
    versions = pinned_versions(variable)
    return installed_binary(name, versions[0], binary) if versions else None


@attrs.define
class HostTmux(PrivateTmux):
    """The private tmux server, ending every pane's process group before the server."""

    def close(self) -> None:
        try:
            pids = self._tmux("list-panes", "-a", "-F", "#{pane_pid}").split()
        except Exception:  # no server: nothing to end
            return
        for pid in pids:
            _end_group(int(pid))
        self.kill_server()


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
    """One distinct screen seen while polling, with its state and when it appeared."""

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


def until(read: Callable[[], object], accept: Callable[[object], bool], timeout: float = 60.0, interval: float = 0.3) -> object:
    """``read()`` again every ``interval`` s until ``accept`` takes its value; fail the test naming the last one."""
    give_up = time.monotonic() + timeout
    while True:
        value = read()
        if accept(value) or time.monotonic() > give_up:
            assert accept(value), f"gave up waiting; last: {value}"
            return value
        time.sleep(interval)
