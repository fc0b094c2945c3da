"""The ``pao`` command line: ``main(argv) -> int``, errors turned into one line here."""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from pao_core.errors import ConfigError, PaoError
from pao_core.output import end_output, guard_standard_streams

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
        command = self.prog.removeprefix("pao").strip()  # the one place errors are printed says "pao: " already
        raise UsageError(f"{command}: {message}" if command else message)

    def _print_message(self, message: str, file: Any = None) -> None:  # argparse drops a failed write: main says it
        if message:
            (file or sys.stderr).write(message)


class UsageError(PaoError):
    exit_code = 2


def _not_available(args: argparse.Namespace, config: PaoConfig) -> int:
    raise PaoError(f"'pao {args.command}' is not available: the plugin that provides it is not installed")


def build_parser(config: PaoConfig | None, plugins: Plugins | None, command: str | None = None,
                 catalog: Mapping[str, Any] | None = None) -> argparse.ArgumentParser:
    """The ``pao`` parser. With the plugin index (``catalog``), only the plugins that add ``command`` are
    imported and only their commands built; without a known command every command stands in by its
    name and help, which is all ``--help`` and a usage error show of it."""
    parser = _Parser(prog="pao", description="Spawn coding agents that start knowing what matters.")
    parser.add_argument("--version", action="version", version=f"pao {_version(catalog)}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    if catalog is None:
        plugins.add_commands(subparsers, config)
    else:
        providers = {provider for name, _, aliases, _, provider in catalog["commands"] if command in (name, *aliases)}
        for provider in providers:  # a known command: the others would only be listed, and nothing lists them
            plugins.add_commands(subparsers, config, only=provider)
        if providers:
            return parser
        for name, help_text, aliases, *_ in catalog["commands"]:
            _stand_in(subparsers, name, help_text, aliases)
    for name, help_text in RESERVED_COMMANDS.items():
        if name not in subparsers.choices:
            _stand_in(subparsers, name, f"{help_text} (not installed)").set_defaults(func=_not_available)
    return parser


def _stand_in(subparsers: argparse._SubParsersAction, name: str, help_text: str | None,
              aliases: Sequence[str] = ()) -> argparse.ArgumentParser:
    stand_in = subparsers.add_parser(name, aliases=aliases, add_help=False, prefix_chars="\0",  # options are words too
                                     **({} if help_text is None else {"help": help_text}))
    stand_in.add_argument("rest", nargs=argparse.REMAINDER)
    return stand_in


def _version(catalog: Mapping[str, Any] | None) -> str:
    if catalog is not None:
        return catalog["version"] or "unknown"
    from importlib.metadata import PackageNotFoundError, version  # only this path needs it: start-up stays light

    try:
        return version("pao-core")
    except PackageNotFoundError:
        return "unknown"


def _command(argv: Sequence[str]) -> str | None:
    """The command word: the first argument that is not an option (``pao`` itself takes none with a value)."""
    for position, argument in enumerate(argv):
        if argument == "--":
            return argv[position + 1] if position + 1 < len(argv) else None
        if not argument.startswith("-"):
            return argument
    return None


def _load_config(plugins: Plugins) -> tuple[PaoConfig, ConfigError | None]:
    """The configuration, or the defaults and the error: ``--help`` and ``--version`` work whatever the file says."""
    from pao_core.config import PaoConfig, home_path, load_config  # configuration loading: only when this path runs

    try:
        return load_config(tables=plugins.config_tables(), strict_tables=plugins.complete), None
    except ConfigError as exc:
        return PaoConfig(home=home_path()), exc


def main(argv: Sequence[str] | None = None) -> int:
    try:
        guard_standard_streams()
        return end_output(_run(sys.argv[1:] if argv is None else list(argv)))
    except PaoError as exc:
        print(f"pao: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("pao: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `pao list | head -1`: the reader has what it wanted
        return end_output(141)
    except UnicodeError as exc:  # an argument or file that is not UTF-8 met a place that needs UTF-8
        print(f"pao: cannot use text that is not valid UTF-8 ({exc.reason})", file=sys.stderr)
        return 1
    except OSError as exc:  # an unreadable PAO_HOME, a file where a folder should be...: one line, no traceback
        where = f" {exc.filename}" if exc.filename else ""
        print(f"pao: cannot use{where}: {exc.strerror or exc}", file=sys.stderr)
        return 1


def _run(argv: list[str]) -> int:
    command, catalog = _command(argv), None
    if "pao_core.plugins" not in sys.modules:
        from pao_core.plugin_index import load_object, read_index  # the standard library only: start-up stays light

        catalog = read_index(os.environ)
    if catalog is not None and command is None:  # --help, --version or no command: no plugin, no configuration
        parser = build_parser(None, None, catalog=catalog)
        parser.parse_args(argv)
        return _usage(parser)
    entry = next((entry for entry in catalog["commands"] if command in (entry[0], *entry[2])), None) if catalog else None
    for function in catalog.get("ahead", {}).get(entry[0], ()) if entry else ():  # type: ignore[union-attr]
        try:  # what a plugin starts ahead (pao_ahead) only saves time: the command works without it
            load_object(function)(argv)
        except Exception:  # noqa: BLE001
            pass
    answered = load_object(entry[3])(argv, catalog) if entry and entry[3] else None
    if answered is not None:  # the command answered before any plugin loaded (its parser's ``light``)
        return answered
    from pao_core.plugins import get_plugins, save_index  # pluggy: loaded on use

    plugins = get_plugins(catalog)
    config, config_error = _load_config(plugins)
    if plugins.index is None:  # a complete load: the next run starts from its index
        save_index(plugins, config)
    parser = build_parser(config, plugins, command, plugins.catalog)
    args = parser.parse_args(argv)
    func = getattr(args, "func", None)
    if not func:
        return _usage(parser)
    if getattr(func, "tolerates_config_error", False):
        args.config_error = config_error
    elif config_error is not None:
        raise config_error
    for router in plugins.command_routers(config):  # say, the agent runs on another machine
        routed = router.route(args, config)
        if routed is not None:
            return routed
    return int(func(args, config) or 0)


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help(sys.stderr)
    return 2


def run() -> None:
    """Console-script entry point."""
    import gc  # the pao command's own process: the tens of thousands of objects its start-up makes live to its end

    gc.set_threshold(50_000, 10, 10)  # so a collection per 50,000 allocations, not 700: ~5-10 ms of CPU less per run
    try:
        code = main()
    except SystemExit as leaving:  # --help and --version end so: what they printed must reach the reader too
        code = end_output(leaving.code)
    gc.freeze()  # the process ends here: its objects need no collection at exit (a spawn's take tens of ms)
    sys.exit(code)
