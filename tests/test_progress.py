"""Progress on a terminal (a real pseudo-terminal), silence elsewhere; ``spawn --timeout``."""

from __future__ import annotations

import io
import os
import pty
import subprocess
import sys
import time

import pytest

from pao_testing.lifecycle.fixtures import RUN_PAO, Pao, pao  # noqa: F401  (fixture)
from pao_core.progress import CLEAR, Progress


def _read_all(fd: int) -> str:
    chunks = []
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # EIO: the other end closed
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks).decode("utf-8", "replace")


def test_a_terminal_sees_the_label_the_detail_and_the_elapsed_time() -> None:
    master, slave = pty.openpty()
    stream = os.fdopen(slave, "w", encoding="utf-8", closefd=True)
    with Progress("indexing ~/.claude/projects", stream=stream, delay=0.2, interval=0.1) as progress:
        progress.update("120 files read")
        time.sleep(1.3)
        progress.say("pao: a step line")
    stream.close()
    shown = _read_all(master)
    os.close(master)
    assert "pao: indexing ~/.claude/projects: 120 files read (1 s)" in shown
    assert "pao: a step line\r\n" in shown  # printed whole, the status line redrawn after it
    assert shown.endswith(CLEAR)  # and wiped at the end


def test_not_a_terminal_gets_nothing_and_quick_work_shows_nothing() -> None:
    piped = io.StringIO()
    with Progress("indexing", stream=piped, delay=0.0, interval=0.01) as progress:
        progress.update("1 of 2")
        time.sleep(0.1)
    assert piped.getvalue() == ""
    master, slave = pty.openpty()
    stream = os.fdopen(slave, "w", encoding="utf-8", closefd=True)
    with Progress("indexing", stream=stream):  # done well within its one-second delay
        pass
    stream.close()
    assert _read_all(master) == ""
    os.close(master)


def test_spawn_shows_the_wait_for_readiness_and_honours_timeout(pao: Pao) -> None:
    """A real pao process whose stderr is a terminal, an agent that takes 30 s to get ready, --timeout 2."""
    pao.folder("slow")
    master, slave = pty.openpty()
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, RUN_PAO, "spawn", "x", "--folder", "slow", "--timeout", "2"],
        cwd=pao.workdir, env={**os.environ, "FAKE_AGENT_START_DELAY": "30"},
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=slave, timeout=60,
    )
    elapsed = time.monotonic() - started
    os.close(slave)
    shown = _read_all(master)
    os.close(master)
    assert done.returncode == 1
    assert elapsed < 2 + 15  # the timeout, plus start-up and clean-up on a loaded machine
    assert "pao: spawning: waiting until the agent is ready (1 s)" in shown
    assert shown.rstrip().endswith("pao: slow was not ready after 2 s (screen: unknown; last line: starting fake agent…)")


@pytest.mark.parametrize("value", ["0", "-3", "soon", "inf"])
def test_a_bad_timeout_is_a_usage_error(pao: Pao, value: str) -> None:
    code, _, err = pao("spawn", "x", "--timeout", value)
    assert code == 2 and err.count("\n") == 1 and "--timeout" in err
    assert pao.tmux("list-windows", "-a").stdout == ""
