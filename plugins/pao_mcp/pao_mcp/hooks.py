"""Hook implementations of pao-mcp: the ``pao mcp`` command. Imports nothing heavy until it runs."""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING

from pao_core.hookspecs import hookimpl

if TYPE_CHECKING:
    from pao_core.config import PaoConfig
    from pao_core.models import McpServer, SpawnRequest

AGENT_VARIABLE = "PAO_AGENT_NAME"
SERVER_NAME = "pao"
TOOLS = ("search_memory", "remember", "memory_status")


@hookimpl
def pao_session_mcp_servers(config: PaoConfig, request: SpawnRequest) -> list[McpServer]:
    """``pao``: this interpreter runs ``pao_core mcp`` for the agent (no need for ``pao`` on its PATH)."""
    import sys

    from pao_core.models import McpServer

    args = ["-m", "pao_core", "mcp", "--agent", request.name]  # the session id: pao's registry, at call time
    env = {"PAO_HOME": str(config.home)}
    if config.source:
        env["PAO_CONFIG"] = str(config.source)
    inherit = tuple(sorted(name for name in os.environ if name.startswith("PAO_") and name not in env))
    return [McpServer(SERVER_NAME, sys.executable, tuple(args), env, inherit, TOOLS)]


@hookimpl
def pao_add_commands(subparsers: argparse._SubParsersAction, config: PaoConfig) -> None:
    parser = subparsers.add_parser(
        "mcp",
        help="serve the memory tools (search_memory, remember, memory_status) over MCP's stdio transport",
        description="An MCP server on stdin/stdout; a spawned agent's CLI starts it itself (docs/mcp.md).",
    )
    parser.add_argument(
        "--agent", metavar="NAME", default=None,
        help=f"whose session this is: the provenance of what remember stores (default: ${AGENT_VARIABLE}, else 'user')",
    )
    parser.add_argument("--session-id", metavar="ID", default=None,
                        help="the session's id (default: the one pao's registry has for --agent)")
    parser.add_argument("--remember-to", metavar="STORE", default="longterm",
                        help="the writable memory store remember writes to (default: longterm)")
    parser.set_defaults(func=run_mcp)


def run_mcp(args: argparse.Namespace, config: PaoConfig) -> int:
    from pao_core.plugins import get_plugins
    from pao_core.topic import check_name, reject_control

    # The SDK and its dependencies load only here: `pao --help` never imports them.
    from pao_mcp.server import serve
    from pao_mcp.tools import MemoryTools

    agent = args.agent or os.environ.get(AGENT_VARIABLE) or "user"
    check_name(agent)
    if args.session_id:
        reject_control(args.session_id, "--session-id")
    serve(MemoryTools(config, get_plugins(), agent, args.session_id or None, args.remember_to))
    return 0
