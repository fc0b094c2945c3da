"""Five ``pao spawn`` processes at once, each starting the real Claude Code CLI.

Every CLI rewrites ``~/.claude.json`` on start while the other pao processes pre-seed
their folders into it: all five must end ready and nudged, with the file valid, all five
trust entries in it and every key of the user's kept. Runs once per pinned CLI
version, inside a loopback-only network namespace when root.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pao_testing.anthropic_stub import AnthropicStub
from pao_testing.claude_cli import PrivateTmux

pytestmark = pytest.mark.realcli
AGENTS = 5
USER_KEYS = {"theme": "dark-daltonized", "userKeyKeptByPao": {"nested": [1, 2, 3]}, "userFlagKeptByPao": False}


def test_five_concurrent_spawns_keep_claude_json_whole(
    claude_cli: Path,
    claude_home: Path,
    claude_env: dict[str, str],
    anthropic_stub: AnthropicStub,
    private_tmux: PrivateTmux,
    tmp_path: Path,
) -> None:
    config_file = claude_home / ".claude.json"
    seeded = json.loads(config_file.read_text(encoding="utf-8"))
    seeded.update(USER_KEYS)
    seeded["projects"] = {"/home/someone/elsewhere": {"allowedTools": ["Bash(ls)"], "hasTrustDialogAccepted": False}}
    config_file.write_text(json.dumps(seeded), encoding="utf-8")
    (tmp_path / "config.toml").write_text("")
    env = {**os.environ, **claude_env, "PAO_CLAUDE_COMMAND": str(claude_cli), "PAO_TMUX_SOCKET": private_tmux.socket,
           "PAO_LOAD_PLUGINS": "pao-agents,pao-tmux,pao-hosts", "PAO_HOME": str(tmp_path / "pao"), "PAO_CONFIG": str(tmp_path / "config.toml")}
    folders = [tmp_path / f"service-{i}" for i in range(AGENTS)]
    for folder in folders:
        folder.mkdir()
    spawns = [
        subprocess.Popen([sys.executable, "-m", "pao_core", "spawn", f"tidy the logging of service {i}",
                          "--folder", str(folder), "--json"],
                         env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for i, folder in enumerate(folders)
    ]
    results = [(spawn.wait(timeout=180), *spawn.communicate()) for spawn in spawns]

    for code, out, err in results:
        assert code == 0, err
        assert json.loads(out)["state"] == "busy"  # ready, then nudged
    for i in range(AGENTS):
        nudged = anthropic_stub.wait_for_message(f"tidy the logging of service {i}", timeout=60.0,
                                                 where=lambda request: request.is_conversation)
        assert nudged is not None, f"agent {i} never sent its nudge to the model"

    config = json.loads(config_file.read_text(encoding="utf-8"))  # valid JSON after every writer
    for folder in folders:
        assert config["projects"][str(folder)]["hasTrustDialogAccepted"] is True
    assert config["projects"]["/home/someone/elsewhere"] == {"allowedTools": ["Bash(ls)"], "hasTrustDialogAccepted": False}
    assert {key: config[key] for key in USER_KEYS} == USER_KEYS
    assert config["hasCompletedOnboarding"] is True and config["numStartups"] >= 1

    listing = subprocess.run([sys.executable, "-m", "pao_core", "list", "--json"], env=env, capture_output=True,
                             text=True, timeout=60, check=True)
    assert sorted(row["name"] for row in json.loads(listing.stdout)["agents"]) == sorted(f"tidy-logging-service-{i}" for i in range(AGENTS))  # named from the topic
