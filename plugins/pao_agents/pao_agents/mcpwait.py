"""Holding a spawned agent's first prompt until its CLI has pao's MCP tool list (issue 30: memory in the first turn).

Claude Code 2.1.332 in a terminal sends its first request without waiting for its ``--mcp-config`` servers: its
``CLAUDE_CODE_MCP_PREWAIT_SERVERS`` and ``CLAUDE_CODE_MCP_STARTUP_WAIT_MS`` serve only its ``-p``/SDK host. So a host
that says ``holds_first_prompt_for_mcp`` gets its task typed (not passed on its command line) once ``pao mcp`` recorded
``McpToolsListed`` in the agent's event log, or once ``LIST_WAIT`` passed: then pao submits it anyway and says so.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

from pao_agents.agentdir import EVENTS, read_events
from pao_core.waiting import poll_until

if TYPE_CHECKING:
    from pao_agents.spec.contracts import HostAgent

LISTED_EVENT = "McpToolsListed"
LIST_WAIT = 5.0
"""Seconds spawn waits, after the CLI's ready screen, for its MCP server's tool list before submitting the task."""


def holds_first_prompt(host_agent: HostAgent, servers: tuple[object, ...], agent_dir: str | None) -> bool:
    """Whether the task waits for the tool list: MCP servers wired, a host that asks for it, an event log to read."""
    return bool(servers and agent_dir and host_agent.holds_first_prompt_for_mcp)


def tools_listed(agent_dir: str, timeout: float = LIST_WAIT) -> bool:
    """Wait until the agent's event log records ``McpToolsListed``; ``False`` past ``timeout``."""
    log = Path(agent_dir, EVENTS)
    return poll_until(lambda: any(event.get("name") == LISTED_EVENT for event in read_events(log)), timeout, cap=0.02)


def await_tools_listed(agent_dir: str, name: str, timeout: float = LIST_WAIT) -> bool:
    """``tools_listed``, saying on stderr when the task goes out without the tools."""
    if tools_listed(agent_dir, timeout):
        return True
    print(f"pao: {name}'s CLI did not list pao's MCP tools within {timeout:g} s; its task was submitted anyway "
          "(the tools come in a later turn)", file=sys.stderr)
    return False
