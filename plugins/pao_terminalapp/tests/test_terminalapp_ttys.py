"""The real parts of the seam that run on Linux too: ending a tty's processes, the clipboard."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pao_core.errors import PaoError
from pao_terminalapp.bridge import PbClipboard
from pao_terminalapp.ttys import PsTtyProcesses


def start_on_new_tty(script: str) -> tuple[subprocess.Popen, str, int]:
    """A shell session whose controlling terminal is a fresh pty, like a Terminal.app tab."""
    master, slave = os.openpty()
    tty = os.ttyname(slave)
    # Not a process-group leader, so setsid(1) becomes the session leader itself, without forking.
    session = subprocess.Popen(["setsid", "--ctty", "sh", "-c", script], stdin=slave, stdout=slave, stderr=slave)
    os.close(slave)
    return session, tty, master


def wait_for_pids(ttys: PsTtyProcesses, tty: str, count: int) -> list[int]:
    deadline = time.monotonic() + 10
    while len(pids := ttys.pids(tty)) < count and time.monotonic() < deadline:
        time.sleep(0.05)
    return pids


def test_end_hangs_up_every_process_of_the_tty() -> None:
    session, tty, master = start_on_new_tty("sleep 300 & sleep 300 & wait")
    ttys = PsTtyProcesses()
    try:
        pids = wait_for_pids(ttys, tty, 3)
        assert len(pids) == 3
        ended = ttys.end(tty, grace=5.0)
        assert sorted(ended) == sorted(pids)
        assert ttys.pids(tty) == []
        assert session.wait(timeout=5) == -1  # SIGHUP
    finally:
        session.kill()
        os.close(master)


def test_end_kills_what_ignores_the_hangup_after_the_grace_period() -> None:
    session, tty, master = start_on_new_tty("trap '' HUP; sleep 300 & trap '' HUP; wait")
    ttys = PsTtyProcesses()
    try:
        assert len(wait_for_pids(ttys, tty, 2)) == 2
        started = time.monotonic()
        ttys.end(tty, grace=0.5)
        assert ttys.pids(tty) == []
        assert time.monotonic() - started < 5.5  # the grace period, plus a generous margin
    finally:
        session.kill()
        os.close(master)


def test_a_tty_without_processes_has_nothing_to_end() -> None:
    master, slave = os.openpty()
    try:
        assert PsTtyProcesses().end(os.ttyname(slave), grace=0.1) == []
    finally:
        os.close(master)
        os.close(slave)


def fake_pasteboard(tmp_path: Path) -> PbClipboard:
    """Stand-ins for macOS's pbcopy/pbpaste that keep the pasteboard in a file, bytes as given."""
    store = tmp_path / "pasteboard"
    store.write_bytes("the user's clipboard ✓".encode())
    copy, paste = tmp_path / "pbcopy", tmp_path / "pbpaste"
    copy.write_text(f"#!{sys.executable}\nimport sys\nopen({str(store)!r}, 'wb').write(sys.stdin.buffer.read())\n")
    paste.write_text(
        f"#!{sys.executable}\nimport os, sys\n"
        "assert sys.argv[1:] == ['-Prefer', 'txt'] and os.environ['LC_ALL'] == 'en_US.UTF-8', sys.argv\n"
        f"sys.stdout.buffer.write(open({str(store)!r}, 'rb').read())\n"
    )
    copy.chmod(0o755)
    paste.chmod(0o755)
    return PbClipboard(pbcopy=str(copy), pbpaste=str(paste))


def test_clipboard_round_trip_keeps_non_ascii_text(tmp_path: Path) -> None:
    clipboard = fake_pasteboard(tmp_path)
    assert clipboard.get() == "the user's clipboard ✓"
    text = "naïve 日本語 🚀\n$HOME `id` 'q' \"dq\"\n"
    clipboard.set(text)
    assert clipboard.get() == text


def test_clipboard_failures_are_one_line(tmp_path: Path) -> None:
    with pytest.raises(PaoError, match=r"^cannot use the clipboard \(.*missing-pbpaste\): "):
        PbClipboard(pbpaste=str(tmp_path / "missing-pbpaste")).get()
    failing = tmp_path / "pbcopy"
    failing.write_text("#!/bin/sh\necho 'pasteboard\n  unavailable' >&2\nexit 3\n")
    failing.chmod(0o755)
    with pytest.raises(PaoError, match=r"^cannot use the clipboard \(.*pbcopy\): pasteboard unavailable$"):
        PbClipboard(pbcopy=str(failing)).set("x")
