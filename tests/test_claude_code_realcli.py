"""End to end with the real Claude Code CLI: pre-seeded, started in tmux, ready, nudged,
and the briefing provably in the model's first request.

Drives tmux directly on a private socket with the host profile's own command,
environment, pre-seed, detector and nudge (the recipe ``pao spawn`` follows). Runs
once per pinned CLI version, inside a loopback-only network namespace when root.
"""

from __future__ import annotations

import datetime as dt
import json
import time
import uuid
from pathlib import Path

import pytest

from pao_core.hosts.claude_code import ClaudeCode, ClaudeCodeOptions
from pao_core.hosts.claude_screens import input_text
from pao_core.models import AgentRecord, SpawnRequest
from pao_core.testing.anthropic_stub import AnthropicStub
from pao_core.testing.claude_cli import PrivateTmux

pytestmark = pytest.mark.realcli
READY_DEADLINE = 45.0


def wait_for_verdict(tmux: PrivateTmux, target: str, profile: ClaudeCode, seen: list[str]) -> float:
    """Poll the screen until the detector says ready; fail at once on any other verdict."""
    detector = profile.detector()
    started = time.monotonic()
    while time.monotonic() - started < READY_DEADLINE:
        screen = tmux.capture(target)
        verdict = detector.classify(screen)
        if verdict is not None:
            seen.append(verdict.state)
            if verdict.state == "ready":
                return time.monotonic() - started
            if verdict.state in ("blocked", "dead", "waiting"):
                pytest.fail(f"{verdict.state}: {verdict.reason}\n{tmux.capture(target, history=True)}")
        time.sleep(0.02)
    pytest.fail(f"not ready within {READY_DEADLINE:.0f} s:\n{tmux.capture(target)}")


def submit(tmux: PrivateTmux, target: str, text: str, submit_key: str) -> int:
    """Paste ``text``, wait until the input box shows it, press the submit key until the box clears.

    Returns how many times the key was pressed (one retry allowed).
    """
    tmux.paste(target, text)
    tmux.wait_for_screen(target, lambda s: (input_text(s) or "").startswith(text[:40]), 10.0)
    for presses in (1, 2):
        tmux.press(target, submit_key)
        try:
            tmux.wait_for_screen(target, lambda s: input_text(s) == "" or "esc to interrupt" in s, 3.0)
            return presses
        except TimeoutError:
            continue
    pytest.fail(f"the nudge was not submitted:\n{tmux.capture(target)}")


def test_briefing_reaches_the_first_request(
    claude_version: str,
    claude_cli: Path,
    claude_home: Path,
    claude_env: dict[str, str],
    anthropic_stub: AnthropicStub,
    private_tmux: PrivateTmux,
    tmp_path: Path,
) -> None:
    folder = tmp_path / "deploy-tools"
    folder.mkdir()
    marker = f"PAO-MARKER-{uuid.uuid4().hex}"
    briefing = f"# Context briefing: rotate the deploy key\n\n- The deploy key rotates on Fridays ({marker}).\n"
    (folder / "CONTEXT_BRIEFING.md").write_text(briefing, encoding="utf-8")
    profile = ClaudeCode(ClaudeCodeOptions(command=str(claude_cli)), home=claude_home)
    (folder / "CLAUDE.md").write_text(profile.context_block("CONTEXT_BRIEFING.md", briefing) + "\n", encoding="utf-8")
    request = SpawnRequest(topic="rotate the deploy key", folder=str(folder), name="deploy-tools")
    started_at = dt.datetime.now(dt.timezone.utc)

    profile.preseed(str(folder))
    env = {**claude_env, **profile.environment(request)}
    target = private_tmux.start(request.name, str(folder), profile.command(request), env)
    seen: list[str] = []
    ready_after = wait_for_verdict(private_tmux, target, profile, seen)
    print(f"\nClaude Code {claude_version}: start to ready {ready_after:.2f} s")

    nudge = profile.nudge(request, "CONTEXT_BRIEFING.md")
    assert marker not in nudge
    presses = submit(private_tmux, target, nudge, profile.submit_key)

    first = anthropic_stub.wait_for_message("rotate the deploy key", timeout=30.0)
    assert first is not None, f"no request carried the nudge; got {len(anthropic_stub.requests)} requests"
    assert marker in first.first_user_text(), "the briefing was not in the first user message"
    assert "blocked" not in seen and "waiting" not in seen and seen[-1] == "ready"
    assert presses in (1, 2)

    # Claude Code rewrote ~/.claude.json itself and kept pao's trust entry.
    config = json.loads((claude_home / ".claude.json").read_text(encoding="utf-8"))
    assert config["projects"][str(folder)]["hasTrustDialogAccepted"] is True
    assert config["hasCompletedOnboarding"] is True and "numStartups" in config

    record = AgentRecord(
        name=request.name, folder=str(folder), topic=request.topic, host=profile.name,
        terminal="tmux", target=target, created_at=started_at,
    )
    deadline = time.monotonic() + 10
    while (session := profile.session_id(record)) is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert session is not None, "no transcript for the folder"
    assert profile.resume_command(record)[-3:-1] == ["--resume", session] or "--resume" in profile.resume_command(record)
