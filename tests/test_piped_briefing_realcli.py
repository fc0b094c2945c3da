"""Claude Code started before its briefing is composed: the briefing file is a pipe its first read waits at.

``pao spawn`` starts the real CLI as soon as its window, session files and trust pre-seed
are written; the briefing (from a notes store made slow here) follows through the pipe, and
is still in the CLI's first request at the loopback Messages stub. A pao that dies before
the briefing is there does not hang the CLI. ``pao`` runs as a separate process (the
pao-notes backend, the pao-tmux driver on a private socket), in a loopback-only namespace when root.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from pao_testing.anthropic_stub import AnthropicStub
from pao_testing.claude_cli import PrivateTmux
from pao_core.waiting import poll_until

pytestmark = pytest.mark.realcli
RUN_PAO = str(Path(__file__).with_name("hosts_support") / "pao_with_notes.py")
DELAY = 1.5
"""Seconds the notes store takes to answer: within the gathering's deadline (2 s), well past the CLI's start."""


def timed_cli(real: Path, folder: Path) -> tuple[Path, Path]:
    """A ``claude`` that writes when it started (one line a start) and then is the real one, beside its package.json."""
    real = real.resolve()
    folder.mkdir()
    package = next(p / "package.json" for p in real.parents if (p / "package.json").exists())
    shutil.copy(package, folder / "package.json")  # pao reads the CLI's version beside its program
    log, wrapper = folder / "exec.log", folder / "claude"
    wrapper.write_text(f'#!/bin/sh\ndate +%s.%N >> "{log}"\nexec "{real}" "$@"\n')
    wrapper.chmod(0o755)
    return wrapper, log


@pytest.fixture
def slow_pao(claude_cli: Path, claude_home: Path, claude_env: dict[str, str], private_tmux: PrivateTmux, tmp_path: Path):
    """``(argv, env, exec_log, notes_done)``: ``pao`` with a notes store that takes :data:`DELAY` seconds."""
    from pao_hosts.claude_code import PIPED_BRIEFING, package_version

    version = package_version(str(claude_cli.resolve()))
    if version is not None and not PIPED_BRIEFING[0] <= version <= PIPED_BRIEFING[1]:  # a held-out one (scripts/heldout)
        pytest.skip(f"Claude Code {version} is outside the versions measured reading a piped briefing: a plain file")
    wrapper, exec_log = timed_cli(claude_cli, tmp_path / "cli")
    done = tmp_path / "notes-done"
    env = {**os.environ, **claude_env, "PAO_CLAUDE_COMMAND": str(wrapper), "PAO_TMUX_SOCKET": private_tmux.socket,
           "PAO_LOAD_PLUGINS": "pao-agents,pao-tmux,pao-hosts,pao-mcp", "PAO_HOME": str(tmp_path / "pao"),
           "PAO_CONFIG": str(tmp_path / "config.toml"), "PAO_TEST_NOTES_DELAY": str(DELAY), "PAO_TEST_NOTES_DONE": str(done)}
    (tmp_path / "config.toml").write_text("")
    marker = f"ROTATE-{uuid.uuid4().hex[:8]}"
    (claude_home / "notes.md").write_text(f"- Deploy key rotation needs the {marker} vault path\n")
    return [sys.executable, RUN_PAO], env, exec_log, done, marker


@pytest.mark.every_claude_pin("the pins read the pipe at different times (2.1.332 ~0.2 s after start, 2.0.77 ~1.2 s)")
def test_the_cli_starts_before_a_slow_briefing_and_its_first_request_still_has_it(
    slow_pao, anthropic_stub: AnthropicStub, tmp_path: Path
) -> None:
    argv, env, exec_log, done, marker = slow_pao
    folder = tmp_path / "api"
    folder.mkdir()

    spawned = subprocess.run([*argv, "spawn", "rotate deploy key", "--folder", str(folder), "--name", "keys", "--json"],
                             env=env, capture_output=True, text=True, timeout=120)

    assert spawned.returncode == 0, spawned.stderr
    record = json.loads(spawned.stdout)
    started, composed = float(exec_log.read_text().split()[0]), float(done.read_text())
    assert started < composed - 0.5, "the CLI started only once its memory had answered"
    first = anthropic_stub.wait_for_message("rotate deploy key", 60, where=lambda request: request.is_conversation)
    assert first is not None
    assert marker in first.text(), "the task's first request went out without the briefing"  # (2.0.77's sub-agent
    # warm-up requests before it carry their own system prompts, with or without the pipe)
    assert record["extra"]["briefing_handed"] is True and "without its briefing" not in spawned.stderr
    briefing = Path(record["extra"]["briefing_file"])
    assert briefing.is_file() and marker in briefing.read_text() and briefing.stat().st_mode & 0o777 == 0o600
    assert sorted(p.name for p in briefing.parent.glob("briefing*")) == ["briefing.md"]


def test_a_pao_that_dies_before_the_briefing_does_not_hang_its_cli(
    slow_pao, private_tmux: PrivateTmux, tmp_path: Path
) -> None:
    argv, env, exec_log, _, _ = slow_pao
    env["PAO_TEST_NOTES_DELAY"] = "30"  # never, as far as this CLI is concerned
    env["PAO_CONFIG"] = str(tmp_path / "slow.toml")
    (tmp_path / "slow.toml").write_text("[gather]\ndeadline = 60\n")
    folder = tmp_path / "api"
    folder.mkdir()

    spawning = subprocess.Popen([*argv, "spawn", "rotate deploy key", "--folder", str(folder), "--name", "keys"],
                                env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    assert poll_until(exec_log.exists, 30), "the CLI never started"
    os.killpg(spawning.pid, signal.SIGKILL)  # pao and its briefing's helper
    spawning.wait()
    killed = time.monotonic()

    def ready_screen() -> bool:
        panes = subprocess.run(["tmux", "-L", private_tmux.socket, "list-panes", "-a", "-F", "#{pane_id}"],
                               capture_output=True, text=True).stdout.split()
        return any("? for shortcuts" in private_tmux.capture(pane) for pane in panes)

    assert poll_until(ready_screen, 20, cap=0.2), "the CLI hung at its briefing"
    assert time.monotonic() - killed < 10
    briefing = Path(env["PAO_HOME"], "agents", "keys", "briefing.md")
    assert poll_until(briefing.is_file, 5) and briefing.read_text() == ""


def test_a_briefing_pipe_left_by_a_killed_feeder_does_not_hang_resume(
    slow_pao, anthropic_stub: AnthropicStub, tmp_path: Path
) -> None:
    """A feeder killed with its pipe still in place (the briefing composed beside it): ``pao resume`` puts that
    briefing there as a plain file, where the CLI would otherwise wait at the pipe (until pao's 45 s bound said it
    was not ready, and then for ever)."""
    argv, env, _, _, _ = slow_pao
    env["PAO_TEST_NOTES_DELAY"] = "0"
    folder = tmp_path / "api"
    folder.mkdir()
    run = lambda *args: subprocess.run([*argv, *args], env=env, capture_output=True, text=True, timeout=120)  # noqa: E731
    spawned = run("spawn", "rotate deploy key", "--folder", str(folder), "--name", "keys", "--json")
    assert spawned.returncode == 0, spawned.stderr
    assert anthropic_stub.wait_for_message("rotate deploy key", 60, where=lambda r: r.is_conversation) is not None
    assert run("pause", "keys").returncode == 0
    briefing = Path(json.loads(spawned.stdout)["extra"]["briefing_file"])
    marker = f"RESUMED-{uuid.uuid4().hex[:8]}"
    briefing.unlink()
    os.mkfifo(briefing, 0o600)
    Path(f"{briefing}.ready").write_text(f"- The resumed session keeps the {marker} path\n")

    resumed = run("resume", "keys")

    assert resumed.returncode == 0, resumed.stderr
    assert briefing.is_file() and not briefing.is_symlink() and marker in briefing.read_text()
    assert not Path(f"{briefing}.ready").exists()
    assert run("send", "keys", "carry on with the rotation").returncode == 0
    after = anthropic_stub.wait_for_message("carry on with the rotation", 60, where=lambda r: r.is_conversation)
    assert after is not None  # the resumed CLI took a prompt: it did not wait at its briefing
