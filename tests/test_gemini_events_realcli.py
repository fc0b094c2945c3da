"""The real Gemini CLI reports its own turn events (issue 30): a finished turn, a permission question, a turn an API
error ended and its exit record the agent's state and notify at once, with no ``pao monitor`` and no ``pao status`` reading its screen.

The pinned CLI runs in tmux through the pao-tmux driver against the loopback Gemini stub, as root with ``PAO_HOME``
in a folder only root can write to (Gemini reads the per-agent system-defaults file that carries pao's hooks only
then); ``[notify] command`` is a real executable recording its argv.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pao_testing.host_cases import CASES
from pao_testing.hostrun import _end_group, fail_unless_loopback_only, until
from pao_testing.private import root_private_dir
from pao_testing.webhook_stub import argv_recorder, recorded_argv

pytestmark = pytest.mark.realcli


def _pao(env: dict[str, str], *args: str, timeout: float = 150) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pao_core", *args], env=env, capture_output=True, text=True,
                          timeout=timeout)


def _notified(log: Path, state: str) -> list[list[str]]:
    return [run for run in recorded_argv(log) if run[1] == state]


def test_gemini_s_hooks_record_and_notify_a_turn_a_question_and_its_exit() -> None:
    fail_unless_loopback_only()
    case = CASES["gemini"]
    assert case.binary is not None and case.binary.exists(), f"{case.binary} is missing: run scripts/setup --test"
    with root_private_dir("gemini-events-") as root, case.make_stub() as stub:
        home, folder = root / "user", root / "billing"
        home.mkdir(), folder.mkdir()
        subprocess.run(["git", "init", "-q", str(folder)], check=True)
        argv_log = _notify_by_command(root)
        stub.tool_trigger = "RUN-IT"  # answered with a shell call that writes: Gemini asks before running it
        stub.tool_call = ("run_shell_command", {"command": "touch pao-stub-file"})
        socket = f"pao-test-{os.getpid()}-gemini-events"
        env = _environment(case, stub, root, home, socket)
        record: dict = {}
        try:
            spawned = _pao(env, "spawn", "say hi", "--folder", str(folder), "--host", "gemini", "--name", "gem",
                           "--no-mcp", "--json")
            assert spawned.returncode == 0, spawned.stderr
            record = json.loads(spawned.stdout)
            assert record["extra"]["events"] == "hooks (system-defaults file)"
            assert record["extra"]["agent_dir"] == str(root / "pao" / "agents" / "gem")

            agent = root / "pao" / "agents" / "gem"

            def notified(state: str, count: int = 1) -> list[list[str]]:
                try:
                    return until(lambda: _notified(argv_log, state), lambda runs: len(runs) >= count, timeout=90)
                except AssertionError:
                    screen = _screen(socket, record["target"])
                    pytest.fail(f"no {state} notified; {sorted(os.listdir(agent))}; events "
                                f"{_text(agent / 'events.jsonl')!r}; notify.log {_text(agent / 'notify.log')!r}; "
                                f"screen:\n{screen}")

            notified("finished")  # AfterAgent
            sent = _pao(env, "send", "gem", "RUN-IT now")  # confirmed by Gemini's BeforeAgent event
            assert sent.returncode == 0, sent.stderr
            asked = notified("waiting")  # the ToolPermission Notification
            assert asked[0][0] == "gem" and "touch pao-stub-file" in asked[0][2] and "requires" not in asked[0][2], asked

            target = record["target"].rpartition(":")[2]  # the pane ("SESSION:%N")
            subprocess.run(["tmux", "-L", socket, "send-keys", "-t", target, "Enter"], check=True)  # allows it once
            notified("finished", 2)  # the tool ran, the turn ended
            stub.error_trigger = "FAIL-IT"  # answered 400: Gemini ends the turn with AfterAgent all the same
            assert _pao(env, "send", "gem", "FAIL-IT now").returncode == 0
            failed = notified("failed")
            assert "400 INVALID_ARGUMENT: pao-stub: invalid request" in failed[0][2], failed
            assert len(_notified(argv_log, "finished")) == 2  # the failed turn was not told as finished
            subprocess.run(["tmux", "-L", socket, "send-keys", "-t", target, "-l", "/quit"], check=True)
            until(lambda: _screen(socket, target), lambda screen: "/quit" in screen, timeout=30)  # typed, then Enter
            subprocess.run(["tmux", "-L", socket, "send-keys", "-t", target, "Enter"], check=True)
            notified("dead")  # SessionEnd
            assert _state(env) == "dead"
            events = [json.loads(line)["event"]["hook_event_name"]
                      for line in (root / "pao" / "agents" / "gem" / "events.jsonl").read_text().splitlines()]
            assert {"SessionStart", "BeforeAgent", "AfterAgent", "Notification", "SessionEnd"} <= set(events), events
        finally:
            if record.get("pid"):
                _end_group(record["pid"])  # Gemini CLI outlives the hang-up
            _pao(env, "kill", "gem", timeout=30)
            subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True, check=False)


def _notify_by_command(root: Path) -> Path:
    """``[notify] command`` in ``root``'s config.toml: an executable recording its argv; the log it writes."""
    script, argv_log = argv_recorder(root)
    (root / "config.toml").write_text(f'[notify]\ncommand = ["{script}", "{{name}}", "{{state}}", "{{reason}}"]\ncollapse = 0\n')
    return argv_log


def _environment(case, stub, root: Path, home: Path, socket: str) -> dict[str, str]:  # noqa: ANN001 - a HostCase
    """pao's environment for the test: the pinned Gemini CLI on a private tmux socket, pao's home under ``root``."""
    return {**{k: v for k, v in os.environ.items() if not k.startswith(("PAO_", "GEMINI_"))},
            "HOME": str(home), **case.user_setup(home, stub), "PAO_LOAD_PLUGINS": "pao-agents,pao-tmux,pao-hosts",
            "PAO_TMUX_SOCKET": socket, case.command_variable: str(case.binary), "TERM": "xterm-256color",
            "PAO_HOME": str(root / "pao"), "PAO_CONFIG": str(root / "config.toml")}


def _screen(socket: str, target: str) -> str:
    return subprocess.run(["tmux", "-L", socket, "capture-pane", "-p", "-t", target], capture_output=True, text=True).stdout


def _text(path: Path) -> str:
    return path.read_text() if path.exists() else "(none)"


def _state(env: dict[str, str]) -> str:
    listed = _pao(env, "list", "--json")
    return next(row["state"] for row in json.loads(listed.stdout)["agents"] if row["name"] == "gem")
