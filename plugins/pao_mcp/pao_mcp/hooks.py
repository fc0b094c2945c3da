"""Hook implementations of pao-mcp: the ``pao mcp`` command. Imports nothing heavy until it runs."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import TYPE_CHECKING

from pao_agents.spec import hookimpl as agent_hookimpl
from pao_core.config import load_config
from pao_core.errors import ConfigError
from pao_core.hookspecs import hookimpl
from pao_agents.spec import McpServer
from pao_core.plugins import get_plugins, reset_plugins
from pao_core.topic import reject_control

if TYPE_CHECKING:
    from pao_core.config import PaoConfig
    from pao_core.contracts import BriefingSection
    from pao_agents.spec import SpawnRequest

AGENT_VARIABLE = "PAO_AGENT_NAME"
SERVER_NAME = "pao"
TOOLS = ("search_memory", "remember", "memory_status")
ENV_FILE = "pao-mcp-env.json"


@hookimpl
def pao_briefing_sections(config: PaoConfig) -> list[BriefingSection]:
    """``more``: how the agent asks the ``pao`` server this plugin wires into its session for more."""
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
    parser.add_argument(
        "--agent", metavar="NAME", default=None,
        help=f"whose session this is: the provenance of what remember stores (default: ${AGENT_VARIABLE}, else 'user')",
    )
    parser.add_argument("--session-id", metavar="ID", default=None,
                        help="the session's id (default: the one pao's registry has for --agent)")
    parser.add_argument("--remember-to", metavar="STORE", default="longterm",
                        help="the writable memory store remember writes to (default: longterm)")
    parser.add_argument("--env-file", metavar="FILE", default=None,
                        help="a JSON object of PAO_* variables to use (pao spawn writes one, 0600, per agent)")
    parser.set_defaults(func=run_mcp)


def run_mcp(args: argparse.Namespace, config: PaoConfig) -> int:
    from pao_agents.spec import check_name  # not needed until this runs: start-up stays light

    # The SDK and its dependencies load only here: `pao --help` never imports them.
    from pao_mcp.server import serve
    from pao_mcp.tools import MemoryTools  # not needed until this runs: start-up stays light

    if args.env_file:
        config = _with_variables(args.env_file)
    agent = args.agent or os.environ.get(AGENT_VARIABLE) or "user"
    check_name(agent)
    if args.session_id:
        reject_control(args.session_id, "--session-id")
    os.chdir("/")  # started by hand in a folder (docs/mcp.md): nothing the tools open comes from there
    serve(MemoryTools(config, get_plugins(), agent, args.session_id or None, args.remember_to))
    return 0


def _with_variables(path: str) -> PaoConfig:
    """Apply the ``PAO_*`` variables of ``path`` to this process; the configuration and plugins they select."""

    try:
        variables = json.loads(open(path, encoding="utf-8").read())
    except (OSError, ValueError) as exc:
        raise ConfigError(f"--env-file {path}: {exc}") from None
    if not isinstance(variables, dict) or not all(
        isinstance(k, str) and k.startswith("PAO_") and isinstance(v, str) for k, v in variables.items()
    ):
        raise ConfigError(f"--env-file {path}: not an object of PAO_* variables")
    os.environ.update(variables)
    reset_plugins()  # PAO_LOAD_PLUGINS / PAO_DISABLE_PLUGINS may be among them
    return load_config()
