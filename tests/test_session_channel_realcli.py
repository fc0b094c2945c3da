"""The session channel with the real Claude Code CLI: briefing through ``--append-system-prompt-file``,
events through ``--settings`` hooks, the task as the first prompt, the session id chosen by pao.

Each test runs ``pao`` as a separate process (the pao-notes backend reading
``~/notes.md``, the pao-tmux driver on a private socket) against the loopback
Messages stub (the hook tests once per pinned CLI version), inside a loopback-only namespace when root.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from pao_testing.anthropic_stub import AnthropicStub
from pao_testing.claude_cli import PrivateTmux
from pao_testing.hostrun import until

pytestmark = pytest.mark.realcli
HOOKS_DIFFER = pytest.mark.every_claude_pin("the pins take --settings hooks differently (2.0.77 refuses StopFailure)")
RUN_PAO = str(Path(__file__).with_name("hosts_support") / "pao_with_notes.py")
SECRET = "ENV-SECRET-7f3a9c"
AT_FORMS = ("*@.env*", "**@.env**", "_@.env_", "[a](b)@.env", "@.env", "@./.env")


@pytest.fixture
def run(claude_cli: Path, claude_home: Path, claude_env: dict[str, str], private_tmux: PrivateTmux, tmp_path: Path):
    """``run(*args)``: ``pao ARGS`` with the notes backend; the CLI, its HOME and the stub of this test."""
    env = {**os.environ, **claude_env, "PAO_CLAUDE_COMMAND": str(claude_cli), "PAO_TMUX_SOCKET": private_tmux.socket,
           "PAO_LOAD_PLUGINS": "pao-agents,pao-tmux,pao-hosts,pao-monitor", "PAO_HOME": str(tmp_path / "pao"), "PAO_CONFIG": str(tmp_path / "config.toml")}
    (tmp_path / "config.toml").write_text("")

    def run_pao(*args: str, check: bool = True, screen: bool = True) -> subprocess.CompletedProcess[str]:
        extra = {} if screen else {"PAO_TEST_SCREEN_OFF": "1"}
        done = subprocess.run([sys.executable, RUN_PAO, *args], env={**env, **extra}, capture_output=True, text=True,
                              timeout=240)
        assert not check or done.returncode == 0, done.stderr
        return done

    return run_pao


def _git_folder(folder: Path) -> Path:
    folder.mkdir()
    (folder / "README.md").write_text("a project\n")
    (folder / "CLAUDE.md").write_text("# Project rules\nRun the tests before you commit.\n")
    (folder / ".env").write_text(f"PASSWORD={SECRET}\n")
    (folder / ".gitignore").write_text(".env\n")
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init"]):
        subprocess.run(["git", "-C", str(folder), *args], check=True, capture_output=True)
    return folder


def _snapshot(folder: Path) -> tuple[str, list[str], dict[str, str]]:
    """``git status --porcelain --ignored``, every file below the folder (but .git) and the text of the tracked ones."""
    status = subprocess.run(["git", "-C", str(folder), "status", "--porcelain", "--ignored"], capture_output=True,
                            text=True, check=True).stdout
    files = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if ".git" not in p.relative_to(folder).parts)
    texts = {name: (folder / name).read_text() for name in ("README.md", "CLAUDE.md")}
    return status, files, texts


def _conversation_with(stub: AnthropicStub, text: str, timeout: float = 90.0):
    found = stub.wait_for_message(text, timeout=timeout, where=lambda request: request.is_conversation)
    assert found is not None, f"no conversation request carried {text!r}; {len(stub.requests)} requests"
    return found


@HOOKS_DIFFER
def test_two_agents_in_one_folder_each_get_their_own_briefing_and_the_folder_stays_clean(
    run, claude_home: Path, anthropic_stub: AnthropicStub, tmp_path: Path
) -> None:
    deploy, invoice = f"DEPLOY-{uuid.uuid4().hex[:8]}", f"INVOICE-{uuid.uuid4().hex[:8]}"
    forms = " ".join(AT_FORMS)
    (claude_home / "notes.md").write_text(
        f"- Deploy key rotation happens on Fridays ({deploy}); {forms}\n"
        f"- Invoice exporter retries live in {invoice}.toml; {forms}\n"
    )
    folder = _git_folder(tmp_path / "shop")
    before = _snapshot(folder)

    first = json.loads(run("spawn", "rotate deploy key", "--folder", str(folder), "--name", "keys", "--json").stdout)
    second = json.loads(run("spawn", "tidy invoice exporter", "--folder", str(folder), "--name", "bills", "--json").stdout)
    for spawned in (first, second):
        assert spawned["state"] == "busy" and spawned["extra"]["delivery"] == "--append-system-prompt-file"
        assert "7 nudge" not in {step["step"] for step in spawned["steps"]}, "the task went on the command line"

    keys = _conversation_with(anthropic_stub, "rotate deploy key")
    bills = _conversation_with(anthropic_stub, "tidy invoice exporter")
    assert deploy in keys.text() and invoice not in keys.text()
    assert invoice in bills.text() and deploy not in bills.text()
    assert _snapshot(folder) == before, "the folder changed while the agents ran"
    assert all(SECRET not in request.text() for request in anthropic_stub.messages()), "an @ form imported .env"

    for name in ("keys", "bills"):
        private = Path(first["extra"]["agent_dir"]).parent / name
        assert private.stat().st_mode & 0o777 == 0o700
        assert {p.name: p.stat().st_mode & 0o777 for p in private.iterdir()} == {
            "briefing.md": 0o600, "claude-settings.json": 0o600, "events.jsonl": 0o600,
            "state": 0o600, "notify.log": 0o600, "logs.lock": 0o600}  # the hooks' state, their log and its lock
        run("kill", name)
        assert not private.exists()
    assert _snapshot(folder) == before


@HOOKS_DIFFER
def test_state_follows_hook_events_and_the_session_id_is_pao_s(
    run, claude_home: Path, anthropic_stub: AnthropicStub, tmp_path: Path
) -> None:
    folder = _git_folder(tmp_path / "tools")
    spawned = json.loads(run("spawn", "count the widgets", "--folder", str(folder), "--name", "w", "--json").stdout)
    session = spawned["session_id"]
    assert session and spawned["extra"]["events"]
    _conversation_with(anthropic_stub, "count the widgets")

    def transcripts() -> list[str]:  # the CLI writes its transcript around the first request, not before
        return [p.stem for p in (claude_home / ".claude" / "projects").glob("*/*.jsonl") if not p.stem.startswith("agent-")]

    assert until(transcripts, bool, timeout=30) == [session]

    def status() -> dict:
        # every screen reads unknown: only hook events may decide the state
        return json.loads(run("status", "w", "--json", screen=False).stdout)

    idle = until(status, lambda s: s["observed"]["state"] == "ready")
    assert idle["state_source"] == "hooks" and idle["session_id"] == session
    assert idle["delivery"]["channel"] == "--append-system-prompt-file" and idle["delivery"]["receipt"]

    with anthropic_stub.holding():  # the turn stays busy until seen so, however loaded the machine
        run("send", "w", "now count the gadgets")
        busy = until(status, lambda s: s["observed"]["state"] == "busy", timeout=30)
        assert busy["state_source"] == "hooks"
    until(status, lambda s: s["observed"]["state"] == "ready", timeout=60)
    events = [json.loads(line) for line in Path(spawned["extra"]["agent_dir"], "events.jsonl").read_text().splitlines()]
    names = [event["event"]["hook_event_name"] for event in events]
    assert names[0] == "SessionStart" and "UserPromptSubmit" in names and names[-1] == "Stop"
    assert {event["event"]["session_id"] for event in events} == {session}
    shown = json.loads(run("monitor", "--json", screen=False).stdout)["agents"]
    assert shown[0]["last_event"].startswith("Stop ") and shown[0]["last_event"].endswith(" ago"), shown


# git worktrees are pao's own, alike under both pins: the newest runs it
def test_worktree_agent_and_kill_clean(run, anthropic_stub: AnthropicStub, tmp_path: Path) -> None:
    folder = _git_folder(tmp_path / "repo")
    before = _snapshot(folder)
    spawned = json.loads(run("spawn", "sort the imports", "--folder", str(folder), "--name", "tidy", "--worktree", "--json").stdout)
    tree = Path(spawned["folder"])
    assert spawned["extra"]["worktree"]["branch"] == "pao/tidy" and tree != folder and (tree / "README.md").is_file()
    _conversation_with(anthropic_stub, "sort the imports")
    (tree / "scratch.txt").write_text("not committed\n")

    refused = run("kill", "tidy", "--clean", check=False)
    assert refused.returncode != 0 and len(refused.stderr.strip().splitlines()) == 1
    assert "uncommitted" in refused.stderr and tree.is_dir()
    assert json.loads(run("status", "tidy", "--json").stdout)["observed"]["state"] != "dead", "the refusal ended the agent"

    (tree / "scratch.txt").unlink()
    run("kill", "tidy", "--clean")
    assert not tree.exists() and _snapshot(folder) == before
    branches = subprocess.run(["git", "-C", str(folder), "branch", "--list", "pao/tidy"], capture_output=True, text=True).stdout
    assert "pao/tidy" not in branches, "the agent committed nothing: its empty branch goes with the worktree"


@HOOKS_DIFFER
def test_a_permission_prompt_makes_the_agent_waiting_from_its_notification_hook(
    run, anthropic_stub: AnthropicStub, tmp_path: Path
) -> None:
    """The default permission mode: the CLI asks before running the stub's Bash call, its Notification hook fires,
    and ``pao status`` reads ``waiting`` from the event log with the screen classifier switched off."""
    folder = _git_folder(tmp_path / "perm")
    anthropic_stub.tool_trigger = "RUN-IT"
    anthropic_stub.tool_call = ("Bash", {"command": "touch pao-asked-first", "description": "Create a file"})
    spawned = json.loads(run("spawn", "RUN-IT: create the marker file", "--folder", str(folder), "--name", "asker",
                             "--json").stdout)
    _conversation_with(anthropic_stub, "RUN-IT")

    def status() -> dict:  # every screen reads unknown: only hook events may decide the state
        return json.loads(run("status", "asker", "--json", screen=False).stdout)

    waiting = until(status, lambda s: s["observed"]["state"] == "waiting", timeout=90)
    assert waiting["state_source"] == "hooks"
    events = [json.loads(line)["event"] for line in Path(spawned["extra"]["agent_dir"], "events.jsonl").read_text().splitlines()]
    asked = events[-1]  # PermissionRequest, then (a moment later) its permission_prompt Notification
    assert asked["hook_event_name"] == "PermissionRequest" and asked["tool_name"] == "Bash" or \
        asked["hook_event_name"] == "Notification" and "permission" in asked.get("message", "").lower(), asked
    assert "Bash" in waiting["observed"]["reason"] or "permission" in waiting["observed"]["reason"]
    assert not (folder / "pao-asked-first").exists(), "the command ran without asking"
    run("kill", "asker")
