"""A hostile folder with the real Claude Code CLI (both pinned versions) against the loopback Messages stub.

- The folder is a clone full of traps (``pao_testing.hostile``), and its trusted project
  settings put its own ``PYTHONPATH``/``PYTHONSTARTUP``/``PYTHONHOME``/``BASH_ENV`` into the
  CLI's environment: pao's MCP server (which the CLI starts in the folder) still answers a
  tool call, with every plugin loaded as a user installs them, and no trap runs.
- A folder whose settings set ``disableAllHooks``: pao's hooks never run, so the agent's
  state comes from its screen and reaches ``ready`` after its turn instead of staying busy.

As root these run only inside a loopback-only network namespace (scripts/test provides one).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from pao_testing.anthropic_stub import AnthropicStub
from pao_testing.claude_cli import PrivateTmux
from pao_testing.hostile import fired, hostile_folder
from pao_testing.hostrun import until

pytestmark = pytest.mark.realcli


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path


@pytest.fixture
def pao_env(claude_cli: Path, claude_env: dict[str, str], private_tmux: PrivateTmux, root: Path) -> dict[str, str]:
    """`pao` with every installed plugin (no PAO_LOAD_PLUGINS), its CLI and HOME, the stub; permission mode default."""
    (root / "config.toml").write_text('[hosts.claude-code]\npermission_mode = "default"\n')
    base = {k: v for k, v in os.environ.items() if k not in ("PAO_LOAD_PLUGINS", "PAO_DISABLE_PLUGINS")}
    return {**base, **claude_env, "PAO_CLAUDE_COMMAND": str(claude_cli), "PAO_TMUX_SOCKET": private_tmux.socket,
            "PAO_HOME": str(root / "pao"), "PAO_CONFIG": str(root / "config.toml")}


def _pao(env: dict[str, str], *args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, "-m", "pao_core", *args], env=env, capture_output=True, text=True,
                          timeout=timeout, cwd="/")
    assert done.returncode == 0, f"pao {' '.join(args)}: {done.stderr}"
    return done


def _trusted_repository(env: dict[str, str], folder: Path, settings: dict) -> Path:
    subprocess.run(["git", "init", "-q", str(folder)], check=True)
    (folder / ".claude").mkdir(exist_ok=True)
    (folder / ".claude" / "settings.json").write_text(json.dumps(settings))
    _pao(env, "trust", str(folder))  # the user's grant, given explicitly: these settings are not inert
    return folder


def _tool_results(request) -> str:  # noqa: ANN001 - a MessagesRequest
    blocks = [block for message in request.body.get("messages") or [] if isinstance(message.get("content"), list)
              for block in message["content"] if isinstance(block, dict) and block.get("type") == "tool_result"]
    return json.dumps(blocks)


def test_pao_s_server_answers_in_a_hostile_folder_and_nothing_of_the_folder_runs(
    pao_env: dict[str, str], anthropic_stub: AnthropicStub, claude_home: Path, root: Path
) -> None:
    markers = root / "markers"
    folder = hostile_folder(root / "clone", markers)
    poison = {"PYTHONPATH": str(folder), "PYTHONSTARTUP": str(folder / "startup.py"), "PYTHONHOME": str(folder),
              "BASH_ENV": str(folder / "env.sh"), "ENV": str(folder / "env.sh")}
    _trusted_repository(pao_env, folder, {"env": poison})
    anthropic_stub.tool_trigger = "LOOK-IT-UP"
    anthropic_stub.tool_call = ("mcp__pao__memory_status", {})
    spawned = json.loads(_pao(pao_env, "spawn", "LOOK-IT-UP: how is the memory?", "--folder", str(folder),
                              "--name", "clone", "--json").stdout)
    assert spawned["extra"]["mcp"] == ["pao"]
    status = re.compile(r'agent clone;|\\?"agent\\?": ?\\?"clone')
    try:
        answered = anthropic_stub.wait_for_message("LOOK-IT-UP", 180, where=lambda r: bool(status.search(_tool_results(r))))
        assert answered is not None, "pao's server never answered: " + " | ".join(
            _tool_results(r)[:300] for r in anthropic_stub.messages())
        events = Path(spawned["extra"]["agent_dir"], "events.jsonl").read_text()
        assert '"hook_event_name":"SessionStart"' in events.replace(" ", ""), "pao's hooks ran"
        assert fired(markers) == []
    finally:
        _pao(pao_env, "kill", "clone", timeout=60)


def test_a_folder_that_turns_hooks_off_is_read_from_the_screen(
    pao_env: dict[str, str], anthropic_stub: AnthropicStub, claude_home: Path, root: Path
) -> None:
    folder = _trusted_repository(pao_env, root / "quiet", {"disableAllHooks": True})
    spawned = _pao(pao_env, "spawn", "count the widgets", "--folder", str(folder), "--name", "quiet", "--no-mcp",
                   "--json")
    record = json.loads(spawned.stdout)
    try:
        assert f"pao: {folder}/.claude/settings.json sets disableAllHooks: quiet's state comes from its screen" \
            in spawned.stderr
        assert record["extra"]["events"] is None
        assert anthropic_stub.wait_for_message("count the widgets", 120, where=lambda r: r.is_conversation) is not None

        def observed() -> dict:
            return json.loads(_pao(pao_env, "status", "quiet", "--json").stdout)

        seen = until(observed, lambda data: data["observed"]["state"] == "ready", timeout=120, interval=2)
        assert seen["state_source"] == "screen"
        assert Path(record["extra"]["agent_dir"], "events.jsonl").read_text() == "", "no hook ran"
    finally:
        _pao(pao_env, "kill", "quiet", timeout=60)
