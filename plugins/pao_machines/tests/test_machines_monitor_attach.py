"""Two machines, the real Claude Code CLI on the second: ``pao monitor`` shows an agent there in the state
its machine reports (the state ``pao list`` shows), not ``unknown``."""

from __future__ import annotations

import json

import pytest

from pao_testing.anthropic_stub import AnthropicStub
from pao_testing.two_machines import Box

pytestmark = pytest.mark.realcli


def _states(box: Box, *command: str) -> dict[str, tuple[str, str]]:
    agents = json.loads(box.pao(*command, "--json").stdout)["agents"]
    return {agent["name"]: (agent["observed"]["state"], agent["machine"]) for agent in agents}


def test_the_monitor_shows_an_agent_on_another_machine_as_the_list_does(
    claude_box: Box, anthropic_stub: AnthropicStub
) -> None:
    box = claude_box
    box.remote_folder("shop")
    box.pao("spawn", "count the widgets", "--on", "box", "--folder", "~/shop", "--name", "shop")
    assert anthropic_stub.wait_for_message("count the widgets", 90, where=lambda r: r.is_conversation) is not None
    try:
        listed = _states(box, "list")
        assert listed["shop"][0] in ("busy", "ready", "waiting") and listed["shop"][1] == "box"
        assert _states(box, "monitor", "--once") == listed
        table = box.pao("monitor", "--once").stdout
        row = next(line for line in table.splitlines() if line.startswith("shop"))
        assert "box" in row.split() and listed["shop"][0] in row.split()

        box.pao("pause", "shop")
        assert _states(box, "monitor", "--once")["shop"] == ("paused", "box") == _states(box, "list")["shop"]
    finally:
        box.pao("kill", "shop", check=False)
