"""End to end with the real Claude Code CLI through ``pao spawn``: no dialog, readiness
detected, the nudge submitted, and the briefing provably in the model's first request.

``pao spawn`` runs in this process with the real pao-tmux driver on a private socket,
the Claude Code host profile (``PAO_CLAUDE_COMMAND`` = the pinned CLI) and one memory
backend, registered as an ordinary plugin, whose only item carries a unique marker.
The marker reaches the model only through the agent's private briefing file, passed with
``--append-system-prompt-file``; the task is the CLI's first prompt on its command line.
Runs once per pinned CLI version, inside a loopback-only network namespace when root.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from pathlib import Path

import attrs
import pytest

from pao_core import MemoryItem, hookimpl
from pao_core.cli import main
from pao_core.contracts import MemoryBackend
from pao_hosts.claude_code import ClaudeCode
from pao_agents.spec import SpawnRequest
from pao_core.plugins import get_plugins, reset_plugins
from pao_testing.anthropic_stub import AnthropicStub
from pao_testing.claude_cli import PrivateTmux
from pao_testing.hostrun import until

pytestmark = [pytest.mark.realcli,
              pytest.mark.every_claude_pin("each pin's own smoke of the full spawn path: 2.0.x is node cli.js, 2.1.x a native binary")]
TOPIC = "rotate the deploy key"


@attrs.frozen
class OneNote(MemoryBackend):
    """A memory backend holding one note: the marker the model must receive."""

    text: str
    name: str = "notes"

    def search(self, query: str, limit: int, deadline: float) -> list[MemoryItem]:
        return [MemoryItem(backend=self.name, id="note:1", title="deploy key", text=self.text, score=1.0, rank=1)]

    def health(self, deadline: float) -> str:
        return "one note"


@attrs.frozen
class OneNotePlugin:
    backend: OneNote

    @hookimpl
    def pao_memory_backends(self, config):
        return [self.backend]


def _assert_trust_kept_and_no_bypass(claude_home: Path, folder: Path) -> None:
    """Claude Code rewrote ~/.claude.json itself and kept pao's trust entry and the user's keys; nothing accepted a
    bypass of its permission prompts on the user's behalf."""
    config = json.loads((claude_home / ".claude.json").read_text(encoding="utf-8"))
    assert config["projects"][str(folder)]["hasTrustDialogAccepted"] is True
    assert config["hasCompletedOnboarding"] is True and "numStartups" in config
    assert "bypassPermissionsModeAccepted" not in config
    assert not (claude_home / ".claude" / "settings.json").exists() or "skipDangerousModePermissionPrompt" not in (
        claude_home / ".claude" / "settings.json").read_text()


def test_pao_spawn_primes_the_real_cli(
    claude_version: str,
    claude_cli: Path,
    claude_home: Path,
    claude_env: dict[str, str],
    anthropic_stub: AnthropicStub,
    private_tmux: PrivateTmux,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    marker = f"PAO-MARKER-{uuid.uuid4().hex}"
    folder = tmp_path / "deploy-tools"
    folder.mkdir()
    for key, value in claude_env.items():  # pao passes its own environment to the agent
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("PAO_CLAUDE_COMMAND", str(claude_cli))
    monkeypatch.setenv("PAO_TMUX_SOCKET", private_tmux.socket)
    monkeypatch.setenv("PAO_LOAD_PLUGINS", "pao-agents,pao-tmux,pao-hosts")
    reset_plugins()
    get_plugins().manager.register(OneNotePlugin(OneNote(f"The deploy key rotates on Fridays ({marker}).")), name="one-note")
    try:
        started = time.monotonic()
        code = main(["spawn", TOPIC, "--folder", str(folder), "--json"])
        elapsed = time.monotonic() - started
    finally:
        reset_plugins()
    out, err = capsys.readouterr()
    assert code == 0, err
    spawned = json.loads(out)
    steps = {step["step"]: step["ms"] for step in spawned["steps"]}
    with capsys.disabled():
        print(f"\nClaude Code {claude_version}: pao spawn {elapsed:.2f} s, ready after spawn {steps['7 ready'] / 1000:.2f} s")

    # Readiness was detected (a dialog would have stopped pao with its message); the task went on the command line.
    assert "7 ready" in steps and "7 nudge" not in steps
    assert sorted(p.name for p in folder.iterdir()) == [], "pao wrote into the agent's folder"
    record = spawned["record"] if "record" in spawned else spawned
    private = Path(record["extra"]["agent_dir"])
    assert marker in (private / "briefing.md").read_text(encoding="utf-8")
    # the default mode asks before commands, says so, and accepted no bypass on the user's behalf
    assert "permission mode: default (claude-code asks before running commands" in err

    request = SpawnRequest(TOPIC, str(folder), "deploy-tools", "claude-code", agent_dir=str(private))
    nudge = ClaudeCode().nudge(request, "")
    assert marker not in nudge
    first = anthropic_stub.wait_for_message(nudge, timeout=90.0, where=lambda request: request.is_conversation)
    assert first is not None, f"no request carried the task; got {len(anthropic_stub.requests)} requests"
    system = first.text().split(nudge)[0]
    assert marker in system and marker not in first.first_user_text(), "the briefing was not in the system prompt"

    _assert_trust_kept_and_no_bypass(claude_home, folder)

    assert record["state"] == "busy" and record["host"] == "claude-code"
    transcript = claude_home / ".claude" / "projects" / re.sub(r"[^A-Za-z0-9]", "-", str(folder)) / f"{record['session_id']}.jsonl"
    # the CLI writes its transcript after it sent the request: on a loaded machine, a moment later
    assert record["session_id"] and until(transcript.is_file, bool, timeout=30), \
        "the transcript is not under the session id pao chose"
