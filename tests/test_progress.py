"""Progress on a terminal (a real pseudo-terminal), silence elsewhere; ``spawn --timeout``."""

from __future__ import annotations

import io
import os
import re
import pty
import subprocess
import sys
import time

import pytest

from pao_testing.lifecycle.fixtures import RUN_PAO, Pao, pao  # noqa: F401  (fixture)
from pao_agents.spec.progress import Progress, duration, number


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
    assert shown.endswith("\x1b[2K")  # and wiped at the end


def test_a_count_shows_counter_rate_and_time_left_and_at_80_columns_cuts_the_label_not_the_numbers() -> None:
    progress = Progress("embedding observations for semantic search of /home/sam/a/rather/long/folder/name")
    progress.count(1_000, 20_000, "observations")
    time.sleep(0.6)
    progress.count(1_300, 20_000, "observations")
    line = progress.line(80)
    assert len(line) <= 80 and line.startswith("pao: embedding") and "…" in line
    numbers = re.search(r": 1,300 of 20,000 observations \(6%\), ([\d.,]+)/s, (.+) left$", line)
    assert numbers, line
    rate = float(numbers.group(1).replace(",", ""))
    assert 300 < rate < 600  # 300 in a bit over 0.6 s
    assert numbers.group(2) == duration((20_000 - 1_300) / rate)


def test_one_number_format() -> None:
    assert [number(20_000), number(51.27), number(1234.5), number(3.0)] == ["20,000", "51.3", "1,234", "3"]
    assert [duration(0.42), duration(42.4), duration(342), duration(4000)] == ["0.4 s", "42 s", "5 min 42 s", "1 h 06 min"]


def test_not_a_terminal_gets_a_plain_line_now_and_then_and_one_at_the_end() -> None:
    piped = io.StringIO()
    with Progress("indexing", stream=piped, delay=0.0, plain_every=0.2) as progress:
        for done in range(0, 31, 10):
            progress.count(done, 30, "files read")
            time.sleep(0.15)
    lines = piped.getvalue().splitlines()
    assert lines[0] == "pao: indexing: 0 of 30 files read (0%)"
    assert 2 <= len(lines) <= 4 and lines[-1].startswith("pao: indexing: 30 of 30 files read (100%)")
    assert "\x1b" not in piped.getvalue() and "\r" not in piped.getvalue()


def test_quick_work_shows_nothing() -> None:
    piped = io.StringIO()
    with Progress("indexing", stream=piped) as progress:  # done well within its one-second delay
        progress.count(1, 2, "files")
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
        [sys.executable, RUN_PAO, "spawn", "x", "--folder", "slow", "--name", "slow", "--timeout", "2"],
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
