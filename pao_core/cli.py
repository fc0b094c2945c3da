"""The ``pao`` command line: ``main(argv) -> int``, errors turned into one line here."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Sequence

from pao_core.errors import ConfigError, PaoError

if TYPE_CHECKING:
    from pao_core.config import PaoConfig
    from pao_core.plugins import Plugins

RESERVED_COMMANDS: dict[str, str] = {
    "spawn": "start a primed agent",
    "list": "list the agents pao started",
    "status": "show one agent",
    "attach": "show an agent (attach its terminal)",
    "send": "send text to an agent",
    "broadcast": "send text to every agent",
    "kill": "stop an agent",
    "pause": "pause an agent",
    "resume": "resume a paused or dead agent",
    "checkpoint": "save an agent's screen and session for a later resume",
    "monitor": "watch every agent's state",
    "doctor": "check what the next spawn needs",
    "eval": "measure briefing quality on a labelled corpus",
}
"""Commands whose names are kept for pao and its plugins, with their one-line help."""


class _Parser(argparse.ArgumentParser):
    """argparse, but usage errors become a PaoError (one line, exit 2)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{self.prog}: {message}")


class UsageError(PaoError):
    exit_code = 2


def _not_available(args: argparse.Namespace, config: PaoConfig) -> int:
    raise PaoError(f"'pao {args.command}' is not available: the plugin that provides it is not installed")


def build_parser(config: PaoConfig, plugins: Plugins) -> argparse.ArgumentParser:
    parser = _Parser(prog="pao", description="Spawn coding agents that start knowing what matters.")
    parser.add_argument("--version", action="version", version=f"pao {_version()}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    plugins.add_commands(subparsers, config)
    for name, help_text in RESERVED_COMMANDS.items():
        if name not in subparsers.choices:
            reserved = subparsers.add_parser(name, help=f"{help_text} (not installed)", add_help=False)
            reserved.add_argument("rest", nargs=argparse.REMAINDER)
            reserved.set_defaults(func=_not_available)
    return parser


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version  # only this path needs it: start-up stays light

    try:
        return version("pao-core")
    except PackageNotFoundError:
        return "unknown"


def _load_config(plugins: Plugins) -> tuple[PaoConfig, ConfigError | None]:
    """The configuration, or the defaults and the error: ``--help`` and ``--version`` work whatever the file says."""
    from pao_core.config import PaoConfig, home_path, load_config  # configuration loading: only when this path runs

    try:
        return load_config(tables=plugins.config_tables(), strict_tables=plugins.complete), None
    except ConfigError as exc:
        return PaoConfig(home=home_path()), exc


def main(argv: Sequence[str] | None = None) -> int:
    from pao_core.plugins import get_plugins  # pluggy, entry points: loaded on use

    try:
        plugins = get_plugins()
        config, config_error = _load_config(plugins)
        parser = build_parser(config, plugins)
        args = parser.parse_args(argv)
        func = getattr(args, "func", None)
        if not func:
            parser.print_help(sys.stderr)
            return 2
        if getattr(func, "tolerates_config_error", False):
            args.config_error = config_error
        elif config_error is not None:
            raise config_error
        for router in plugins.command_routers(config):  # say, the agent runs on another machine
            routed = router.route(args, config)
            if routed is not None:
                return routed
        return int(func(args, config) or 0)
    except PaoError as exc:
        print(f"pao: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("pao: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 141
    except OSError as exc:  # an unreadable PAO_HOME, a file where a folder should be...: one line, no traceback
        where = f" {exc.filename}" if exc.filename else ""
        print(f"pao: cannot use{where}: {exc.strerror or exc}", file=sys.stderr)
        return 1


def run() -> None:
    """Console-script entry point."""
    sys.exit(main())
