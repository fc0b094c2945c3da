"""``python -I -m pao_mcp``: the handshake first, everything else while it is answered.

The main thread reads stdin and answers ``initialize``, ``ping`` and ``tools/list`` at once
(:mod:`pao_mcp.stdio` and :mod:`pao_mcp.catalog`, the standard library only). Another thread
meanwhile checks the arguments, then loads pao's configuration, plugins and tools;
``tools/call`` waits for them. A wrong argument still ends the
process with one line on stderr (exit 2), before or just after the handshake; a broken
configuration is said on stderr and in each tool's result.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
from typing import TYPE_CHECKING, Any, Sequence

from pao_mcp.stdio import Later, serve

if TYPE_CHECKING:
    from pao_core.config import PaoConfig
    from pao_core.plugins import Plugins
    from pao_mcp.tools import MemoryTools  # the stores' code: loaded on the preparing thread only


def main(argv: Sequence[str]) -> int:
    from pao_mcp.catalog import tool_list  # plain data: tools/list never waits for the preparing thread

    checked, tools = Later(), Later()
    threading.Thread(target=_prepare, args=(list(argv), checked, tools), name="pao-mcp-start", daemon=True).start()
    serve(Later.of(tool_list()), tools, _call, lambda at: record_listed(agent_name(checked.get()), at))
    try:  # the client is gone; a wrong argument is still said (the check ends the process) before this exits 0
        checked.get()
    except Exception:  # noqa: BLE001 - nothing is left to answer
        pass
    return 0


def _call(tools: MemoryTools, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    from pao_mcp.calls import call_tool  # loaded by then: _prepare imports it

    return call_tool(tools, name, arguments)


def _prepare(argv: list[str], checked: Later, tools: Later) -> None:
    try:
        args = _checked_arguments(argv)
        if args.env_file:
            os.environ.update(read_variables(args.env_file))  # before pao's configuration is first read
        checked.set(args)
    except SystemExit as leaving:  # argparse's usage error, already printed
        _leave(leaving.code if isinstance(leaving.code, int) else 2)
    except Exception as exc:  # noqa: BLE001 - a wrong argument: one line, as pao's command line says it
        print(f"pao: {exc}", file=sys.stderr)
        _leave(getattr(exc, "exit_code", 2))
    try:
        # pao's configuration and plugins: on this thread, while the main one serves the handshake
        from pao_core.plugins import load_config
        from pao_core.plugins import get_plugins  # (the same)

        tools.set(memory_tools(args, load_config(), get_plugins()))
        import pao_mcp.calls  # noqa: F401 - its schemas' validators, before the first call needs them
    except Exception as exc:  # noqa: BLE001 - said on stderr and to the agent in each tool's result
        print(f"pao: {exc}", file=sys.stderr)
        tools.set(error=exc)


def _leave(code: int) -> None:
    sys.stderr.flush()
    os._exit(code)  # the main thread may be waiting for stdin: the process ends here


def _checked_arguments(argv: list[str]) -> argparse.Namespace:
    from pao_mcp.options import add_options  # argparse: off the main thread's way to the handshake

    parser = argparse.ArgumentParser(prog="pao mcp", description="pao's memory tools over MCP's stdio transport")
    add_options(parser)
    args = parser.parse_args(argv)
    check_arguments(args)
    return args


def check_arguments(args: argparse.Namespace) -> None:
    """Refuse an agent name or session id pao could not have written (one line, before any tool runs)."""
    # attrs and pao's validation: off the main thread's way to the handshake
    from pao_agents.spec import check_name
    from pao_core.topic import reject_control  # (the same)

    check_name(agent_name(args))
    if args.session_id:
        reject_control(args.session_id, "--session-id")


def memory_tools(args: argparse.Namespace, config: PaoConfig, plugins: Plugins) -> MemoryTools:
    from pao_mcp.tools import MemoryTools  # the stores' code: loaded on the preparing thread only

    return MemoryTools(config, plugins, agent_name(args), args.session_id or None, args.remember_to)


def agent_name(args: argparse.Namespace) -> str:
    from pao_mcp.options import AGENT_VARIABLE  # argparse: off the main thread's way to the handshake

    return args.agent or os.environ.get(AGENT_VARIABLE) or "user"


def read_variables(path: str) -> dict[str, str]:
    """The ``PAO_*`` variables of ``path`` (``pao spawn`` writes it, 0600, in the agent's folder)."""
    from pao_core.errors import ConfigError  # pao_core: off the main thread's way to the handshake

    try:
        variables = json.loads(open(path, encoding="utf-8").read())
    except (OSError, ValueError) as exc:
        raise ConfigError(f"--env-file {path}: {exc}") from None
    if not isinstance(variables, dict) or not all(
        isinstance(k, str) and k.startswith("PAO_") and isinstance(v, str) for k, v in variables.items()
    ):
        raise ConfigError(f"--env-file {path}: not an object of PAO_* variables")
    return variables


def record_listed(agent: str, at: float) -> None:
    """Record in a spawned agent's event log the moment its CLI first had pao's tool list (``McpToolsListed``,
    epoch seconds ``at``); nothing for a server without an agent folder (registered by hand)."""
    from pao_agents.spec import EVENTS, LISTED_EVENT  # once the tool list went out: never on the way to it

    home = os.environ.get("PAO_HOME")
    if not home:
        return
    line = json.dumps({"event": {"hook_event_name": LISTED_EVENT, "server": "pao"}, "at": round(at, 3)}) + "\n"
    try:  # appended as the CLI's hooks append (O_APPEND), to a log that exists, never through a link
        descriptor = os.open(os.path.join(home, "agents", agent, EVENTS),
                             os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return
    try:
        os.write(descriptor, line.encode())
    finally:
        os.close(descriptor)
