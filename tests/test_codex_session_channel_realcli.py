"""Codex CLI's session channel for real: the briefing through a SessionStart hook, events through hooks,
both given as ``-c`` overrides; the task as the first prompt; the folder and the user's config untouched.

``pao`` runs as its own process (the pao-notes backend reading ``~/notes.md``, pao-tmux on a
private socket) against the loopback Responses stub, inside a loopback-only namespace when root.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from pao_testing.host_cases import CASES
from pao_testing.hostrun import fail_unless_loopback_only, until

pytestmark = pytest.mark.realcli
RUNNER = Path(__file__).parent / "hosts_support" / "pao_with_notes.py"
CASE = CASES["codex"]


def _git_folder(folder: Path) -> Path:
    folder.mkdir()
    (folder / "README.md").write_text("a project\n")
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init"]):
        subprocess.run(["git", "-C", str(folder), *args], check=True, capture_output=True)
    return folder


def _snapshot(folder: Path) -> tuple[str, list[str]]:
    status = subprocess.run(["git", "-C", str(folder), "status", "--porcelain", "--ignored"], capture_output=True,
                            text=True, check=True).stdout
    return status, sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if ".git" not in p.relative_to(folder).parts)



def _developer_texts(request) -> list[str]:
    return [part.get("text", "") for item in request.body.get("input") or [] if isinstance(item, dict)
            and item.get("role") == "developer" for part in item.get("content") or [] if isinstance(part, dict)]


def _assert_reported_through_hooks(status: dict, record: dict, home: Path) -> None:
    """The agent's events came through Codex's hooks, and the session id they carry names its transcript."""
    events = [json.loads(line)["event"] for line in
              Path(record["extra"]["agent_dir"], "events.jsonl").read_text().splitlines()]
    names = [event["hook_event_name"] for event in events]
    assert names[0] == "SessionStart" and "UserPromptSubmit" in names and names[-1] == "Stop"
    assert status["session_id"] == events[0]["session_id"], "the session id is the one Codex reported"
    transcripts = list((home / ".codex" / "sessions").glob(f"*/*/*/rollout-*-{status['session_id']}.jsonl"))
    assert transcripts, "the hooked session id names the transcript"


def test_codex_gets_its_briefing_and_reports_its_state_through_hooks(tmp_path: Path, isolated_home: Path) -> None:
    fail_unless_loopback_only()
    assert CASE.binary is not None and CASE.binary.exists(), f"{CASE.binary} is missing: run scripts/setup --test"
    home = isolated_home / "user"
    marker = f"LEDGER-{uuid.uuid4().hex[:8]}"
    (home / "notes.md").write_text(f"- The billing exporter writes its retry ledger to {marker}.csv.\n" + "- padding\n" * 400)
    folder = _git_folder(tmp_path / "billing")
    before = _snapshot(folder)
    socket = f"pao-test-{os.getpid()}-codex-channel"
    with CASE.make_stub() as stub:
        env = {**os.environ, **CASE.user_setup(home, stub), "PAO_LOAD_PLUGINS": "pao-agents,pao-tmux,pao-hosts",
               "PAO_TMUX_SOCKET": socket, CASE.command_variable: str(CASE.binary), "TERM": "xterm-256color"}
        config_before = (home / ".codex" / "config.toml").read_text()

        def pao(*args: str, screen: bool = True) -> subprocess.CompletedProcess[str]:
            extra = {} if screen else {"PAO_TEST_SCREEN_OFF": "1"}
            done = subprocess.run([sys.executable, str(RUNNER), *args], env={**env, **extra}, capture_output=True,
                                  text=True, timeout=180)
            assert done.returncode == 0, done.stderr
            return done

        record: dict = {}
        try:
            record = json.loads(pao("spawn", "fix the billing exporter retries", "--folder", str(folder), "--host", "codex",
                                    "--json").stdout)
            assert record["extra"]["delivery"] == "SessionStart hook (-c hooks)" and record["state"] == "busy"
            assert "7 nudge" not in {step["step"] for step in record["steps"]}, "the task went on the command line"

            first = stub.wait_for_text("/v1/responses", "fix the billing exporter", 90)
            assert first is not None, f"the task never reached the model: {[r.path for r in stub.requests]}"
            assert any(marker in text for text in _developer_texts(first)), "the briefing is not in the first request"
            assert _snapshot(folder) == before, "the folder changed"
            assert "hooks" not in config_before and "hooks" not in (home / ".codex" / "config.toml").read_text(), \
                "pao's hooks (or their trust) were written into the user's config"

            def status() -> dict:  # every screen reads unknown: only hook events may decide
                return json.loads(pao("status", record["name"], "--json", screen=False).stdout)

            idle = until(status, lambda s: s["observed"]["state"] == "ready")
            assert idle["state_source"] == "hooks" and idle["delivery"]["receipt"]
            _assert_reported_through_hooks(idle, record, home)

            with stub.holding():  # the turn stays busy until seen so, however loaded the machine
                pao("send", record["name"], "now count the retries")
                busy = until(status, lambda s: s["observed"]["state"] == "busy", timeout=30)
                assert busy["state_source"] == "hooks"
            until(status, lambda s: s["observed"]["state"] == "ready", timeout=90)
        finally:
            subprocess.run([sys.executable, str(RUNNER), "kill", "fix-billing-exporter-retries"], env=env, capture_output=True,
                           timeout=60)
            if record.get("pid"):
                try:
                    os.killpg(os.getpgid(record["pid"]), signal.SIGKILL)
                except ProcessLookupError:
                    pass
            subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True, check=False)
    assert _snapshot(folder) == before
    assert not Path(record["extra"]["agent_dir"]).exists(), "pao kill removes the agent's private folder"
