"""Spawn holds a Claude Code task until ``pao mcp`` recorded ``McpToolsListed`` (pao_agents.mcpwait): the record
written by the server's own ``record_listed`` ends the wait; without it the wait ends at its bound and says so."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from pao_agents import agentdir, mcpwait
from pao_agents.spec import McpServer
from pao_hosts.claude_code import ClaudeCode
from pao_hosts.codex import CodexHost
from pao_mcp.start import record_listed

SERVER = McpServer("pao", "python", ())


@pytest.fixture
def agent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("PAO_HOME", str(tmp_path))
    return agentdir.fresh_agent_dir(tmp_path, "scout")


def test_the_server_s_record_ends_the_wait_as_soon_as_it_is_written(agent: Path) -> None:
    writer = threading.Timer(0.3, lambda: record_listed("scout", time.time()))
    started = time.monotonic()
    writer.start()
    try:
        assert mcpwait.await_tools_listed(str(agent), "scout", timeout=5)
    finally:
        writer.join()
    assert 0.3 <= time.monotonic() - started < 2


def test_past_the_bound_the_task_goes_anyway_and_pao_says_so(agent: Path, capsys: pytest.CaptureFixture[str]) -> None:
    started = time.monotonic()
    assert not mcpwait.await_tools_listed(str(agent), "scout", timeout=0.4)
    assert 0.4 <= time.monotonic() - started < 2
    said = capsys.readouterr().err
    assert said.startswith("pao: scout's CLI did not list pao's MCP tools within 0.4 s; its task was submitted anyway")
    assert said.count("\n") == 1


def test_only_claude_code_with_pao_s_server_wired_and_an_event_log_holds_its_task(
    agent: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PAO_CLAUDE_COMMAND", "")
    assert mcpwait.holds_first_prompt(ClaudeCode(), (SERVER,), str(agent))
    assert not mcpwait.holds_first_prompt(ClaudeCode(), (), str(agent))  # --no-mcp: the task on the command line
    assert not mcpwait.holds_first_prompt(ClaudeCode(), (SERVER,), None)  # no log to read
    assert not mcpwait.holds_first_prompt(CodexHost(), (SERVER,), str(agent))  # required=true: Codex waits itself


def test_claude_code_2_0_takes_its_task_on_its_command_line_as_it_waits_for_its_servers_itself(
    monkeypatch: pytest.MonkeyPatch, agent: Path
) -> None:
    import attrs

    from pao_testing.claude_cli import cli_path

    def pinned(version: str) -> ClaudeCode:
        host = ClaudeCode()
        return attrs.evolve(host, options=attrs.evolve(host.options, command=str(cli_path(version))))

    assert not mcpwait.holds_first_prompt(pinned("2.0.77"), (SERVER,), str(agent))
    assert mcpwait.holds_first_prompt(pinned("2.1.332"), (SERVER,), str(agent))
