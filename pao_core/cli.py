"""The ``pao`` command line: ``main(argv) -> int``, errors turned into one line here.

One start-up path (drawn in docs/architecture.md, Start-up): argv -> the plugin index, which answers
what it alone can, or the plugins (imported on use from the index, else a complete load) -> the command
-> an exit code. The core names no command: each one is found through the plugins or their index.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from pao_core.errors import ConfigError, PaoError, did_you_mean
from pao_core import output
from pao_core.output import end_output, guard_standard_streams

if TYPE_CHECKING:
    from pao_core.config import PaoConfig
    from pao_core.plugins import Plugins


class _Parser(argparse.ArgumentParser):
    """argparse, but usage errors become a PaoError (one line, exit 2)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        command = self.prog.removeprefix("pao").strip()  # the one place errors are printed says "pao: " already
        message += self._suggestion(message)
        raise UsageError(f"{command}: {message}" if command else message)

    def _suggestion(self, message: str) -> str:
        """For ``invalid choice: 'lst'``, the closest command (or subcommand) there is."""
        import re  # only a usage error needs it

        wrong = re.search(r"invalid choice: '(.*?)' \(choose from", message)
        choices = [word for action in self._actions if isinstance(action, argparse._SubParsersAction)
                   for word in action.choices]
        return did_you_mean(wrong[1], choices) if wrong and choices else ""

    def _print_message(self, message: str, file: Any = None) -> None:  # argparse drops a failed write: main says it
        if message:
            (file or sys.stderr).write(message)


class UsageError(PaoError):
    exit_code = 2


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
    if command is not None and command not in subparsers.choices:
        _refuse_missing(command, plugins, catalog)
    return parser


def _refuse_missing(command: str, plugins: Plugins | None, catalog: Mapping[str, Any] | None) -> None:
    """One line naming the plugin that provided ``command`` when the index remembers it (else argparse's usage error)."""
    from pao_core.plugin_index import missing_plugin  # the standard library only

    if catalog is not None:
        loaded, failed = {entry["distribution"] for entry in catalog["plugins"]}, False
    else:
        loaded = {source.distribution for source in plugins.sources.values()}
        failed = any(failure.stage == "load" for failure in plugins.failures)
    reason = missing_plugin(command, loaded, failed, os.environ)
    if reason is not None:
        raise PaoError(reason)


def _stand_in(subparsers: argparse._SubParsersAction, name: str, help_text: str | None,
              aliases: Sequence[str] = ()) -> None:
    stand_in = subparsers.add_parser(name, aliases=aliases, add_help=False, prefix_chars="\0",  # options are words too
                                     **({} if help_text is None else {"help": help_text}))
    stand_in.add_argument("rest", nargs=argparse.REMAINDER)


def _version(catalog: Mapping[str, Any] | None) -> str:
    if catalog is not None:
        return catalog["version"] or "unknown"
    from pao_core.plugin_index import installed_version  # the standard library only: start-up stays light

    return installed_version("pao-core") or "unknown"


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
    from pao_core.config import PaoConfig, home_path, read_config  # configuration loading: only when this path runs

    try:
        return read_config(tables=plugins.config_tables(), strict_tables=plugins.complete), None
    except ConfigError as exc:
        return PaoConfig(home=home_path()), exc


def main(argv: Sequence[str] | None = None) -> int:
    arguments = sys.argv[1:] if argv is None else list(argv)
    output.json_printed = False  # main may run more than once in a process (tests, pao_machines' router)
    fail = _failure_reporter(arguments)
    try:
        guard_standard_streams()
        return end_output(_run(arguments))
    except PaoError as exc:
        return fail(str(exc), exc.exit_code)
    except KeyboardInterrupt:
        return fail("interrupted", 130)
    except BrokenPipeError:  # `pao list | head -1`: the reader has what it wanted
        return end_output(141)
    except UnicodeError as exc:  # an argument or file that is not UTF-8 met a place that needs UTF-8
        return fail(f"cannot use text that is not valid UTF-8 ({exc.reason})", 1)
    except OSError as exc:  # an unreadable PAO_HOME, a file where a folder should be...: one line, no traceback
        where = f" {exc.filename}" if exc.filename else ""
        return fail(f"cannot use{where}: {exc.strerror or exc}", 1)


def _failure_reporter(argv: Sequence[str]) -> Any:
    """How a failure is said: one line on stderr, and with ``--json`` also ``{"error", "code"}`` on stdout,
    so a script reading stdout always gets one object."""
    wants_json = "--json" in (argv[:argv.index("--")] if "--" in argv else argv)

    def fail(message: str, code: int) -> int:
        print(f"pao: {message}", file=sys.stderr)
        if wants_json and sys.stdout is not None and not output.json_printed:
            import json  # only a failure with --json needs it

            with contextlib.suppress(OSError, ValueError):  # stdout closed or gone: stderr said it already
                print(json.dumps({"error": message, "code": code}), flush=True)
        return code

    return fail


def _run(argv: list[str]) -> int:
    """The one start-up path (the module's docstring draws it)."""
    if "_ARGCOMPLETE" in os.environ:  # the shell asks for completions (``pao completion SHELL``'s script)
        return _complete()
    command = _command(argv)
    index = _plugin_index()
    answered = None if index is None else _answer_from_index(argv, command, index)
    if answered is not None:
        return answered
    from pao_core.plugins import get_plugins, save_index  # pluggy: loaded on use

    plugins = get_plugins(index)
    config, config_error = _load_config(plugins)
    if plugins.index is None:  # a complete load: the next run starts from its index
        save_index(plugins, config)
    parser = build_parser(config, plugins, command, plugins.catalog)
    args = parser.parse_args(argv)
    func = getattr(args, "func", None)
    if not func:
        return _usage(parser)
    if getattr(args, "tolerates_config_error", False):  # its parser says it works with a broken file
        args.config_error = config_error
    elif config_error is not None:
        raise config_error
    taken = (plugins.catalog or {}).get("routed")  # the commands a router may take (the plugin index's); None: any
    for router in plugins.command_routers(config) if taken is None or args.command in taken else ():  # another machine
        routed = router.route(args, config)
        if routed is not None:
            return routed
    return int(func(args, config) or 0)


def _complete() -> int:
    """Completions for the shell from the whole parser (every plugin's commands and options), by argcomplete."""
    import argcomplete  # only completion needs it

    from pao_core.plugins import get_plugins  # pluggy, entry points: loaded on use

    plugins = get_plugins()
    config, _ = _load_config(plugins)  # a broken file still completes
    argcomplete.autocomplete(build_parser(config, plugins), exit_method=sys.exit)
    return 0


def _plugin_index() -> dict[str, Any] | None:
    """The plugin index while it holds; ``None`` when it does not (a complete load follows), or when this process
    already has its plugins (``main`` called again in-process: ``pao machine here``, tests): those answer."""
    if "pao_core.plugins" in sys.modules:
        return None
    from pao_core.plugin_index import read_index  # the standard library only: start-up stays light

    return read_index(os.environ)


def _answer_from_index(argv: list[str], command: str | None, index: dict[str, Any]) -> int | None:
    """What the index alone answers, before any plugin, pluggy or the configuration loads; else ``None``."""
    from pao_core.plugin_index import load_object  # the standard library only

    entry = next((entry for entry in index["commands"] if command in (entry[0], *entry[2])), None)
    if entry is None:  # --help, --version, no command, or one no installed plugin adds: the parser says it
        parser = build_parser(None, None, command, catalog=index)
        parser.parse_args(argv)
        return _usage(parser)
    for function in index.get("shortcuts", {}).get(entry[0], ()):  # pao_shortcuts: the answer (an exit code) or None
        with contextlib.suppress(Exception):  # a shortcut may only save time: the command works the same without it
            if (answered := load_object(function)(argv)) is not None:
                return answered
    for function in index.get("ahead", {}).get(entry[0], ()):
        try:  # what a plugin starts ahead (pao_ahead) only saves time: the command works without it
            load_object(function)(argv)
        except Exception:  # noqa: BLE001
            pass
    return load_object(entry[3])(argv, index) if entry[3] else None  # the parser's ``light``: an exit code or None


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
