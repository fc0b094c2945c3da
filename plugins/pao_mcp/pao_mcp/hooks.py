"""Hook implementations of pao-mcp: the ``pao mcp`` command. Imports nothing heavy until it runs."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import TYPE_CHECKING

from pao_agents.spec import hookimpl as agent_hookimpl
from pao_core.plugins import load_config
from pao_core.hookspecs import hookimpl
from pao_core.plugins import get_plugins, reset_plugins
from pao_mcp import SERVER_NAME
from pao_mcp.options import add_options

if TYPE_CHECKING:
    from pao_agents.spec import McpServer
    from pao_core.config import PaoConfig
    from pao_core.contracts import BriefingSection
    from pao_agents.spec import SpawnRequest

TOOLS = ("search_memory", "remember", "memory_status")
ENV_FILE = "pao-mcp-env.json"


@hookimpl
def pao_briefing_sections(config: PaoConfig) -> list[BriefingSection]:
    """``more``: how the agent asks the ``pao`` server for more, in a session this plugin wired it into."""
    from pao_mcp.section import MoreSection  # the briefing's path only: start-up stays light

    return [MoreSection()]


@agent_hookimpl
def pao_session_mcp_servers(config: PaoConfig, request: SpawnRequest) -> list[McpServer]:
    """``pao``: this interpreter runs ``pao mcp`` for the agent (no need for ``pao`` on its PATH), isolated
    from the agent's folder (:func:`isolation_flags`, ``pao_mcp.__main__``).

    pao's own ``PAO_*`` variables (a store URL may hold a password) go to the server in
    a file of the agent's private folder, never on its command line or in the agent's
    environment.
    """

    args = [*isolation_flags(), "-m", "pao_mcp", "--agent", request.name]
    if request.session_id:  # chosen by pao before the start; otherwise the server asks pao's registry
        args += ["--session-id", request.session_id]
    env = {"PAO_HOME": os.path.abspath(config.home)}  # the server starts in the agent's folder, then leaves it
    if config.source:
        env["PAO_CONFIG"] = os.path.abspath(config.source)
    variables = {name: value for name, value in sorted(os.environ.items()) if name.startswith("PAO_") and name not in env}
    files = {ENV_FILE: json.dumps(variables, indent=2) + "\n"} if variables else {}
    if files:
        args += ["--env-file", os.path.join(env["PAO_HOME"], "agents", request.name, ENV_FILE)]
    from pao_agents.spec import McpServer  # the agents' contracts: a spawn's, not pao brief's

    return [McpServer(SERVER_NAME, sys.executable, tuple(args), env, files, TOOLS)]


def isolation_flags() -> list[str]:
    """``-I``: no ``PYTHON*`` variable, no user site folder, and neither the working directory (the agent's
    folder) nor the script's on ``sys.path``. Where pao itself is installed in the user's site folder
    (``pip install --user``), ``-E -P``: the same but that folder stays."""
    import site  # only at spawn

    user_site = site.getusersitepackages() if site.ENABLE_USER_SITE else None
    here = [module.__file__ for name, module in list(sys.modules.items())
            if name.partition(".")[0].startswith("pao_") and getattr(module, "__file__", None)]
    if user_site and any(os.path.realpath(path).startswith(os.path.realpath(user_site) + os.sep) for path in here):
        return ["-E", "-P"]
    return ["-I"]


@hookimpl
def pao_add_commands(subparsers: argparse._SubParsersAction, config: PaoConfig) -> None:
    parser = subparsers.add_parser(
        "mcp",
        help="serve the memory tools (search_memory, remember, memory_status) over MCP's stdio transport",
        description="An MCP server on stdin/stdout; a spawned agent's CLI starts it itself (docs/mcp.md).",
    )
    add_options(parser)
    parser.set_defaults(func=run_mcp)


def run_mcp(args: argparse.Namespace, config: PaoConfig) -> int:
    """``pao mcp`` from pao's command line (by hand, or a CLI the user set up): the same server as
    ``python -I -m pao_mcp`` (:mod:`pao_mcp.start`), with pao's plugins already loaded."""
    from pao_mcp.calls import call_tool  # the tools and their validators load only here: start-up stays light
    from pao_mcp.catalog import tool_list
    # the server's own modules load only when it runs, as the tools do
    from pao_mcp.start import agent_name, check_arguments, memory_tools, read_variables, record_listed
    from pao_mcp.stdio import Later, serve  # (the same)

    check_arguments(args)
    if args.env_file:
        os.environ.update(read_variables(args.env_file))
        reset_plugins()  # PAO_LOAD_PLUGINS / PAO_DISABLE_PLUGINS may be among them
        config = load_config()
    os.chdir("/")  # started by hand in a folder (docs/mcp.md): nothing the tools open comes from there
    serve(Later.of(tool_list()), Later.of(memory_tools(args, config, get_plugins())), call_tool,
          lambda at: record_listed(agent_name(args), at))
    return 0
