"""``pao plugins`` and ``pao config``."""

from __future__ import annotations

import argparse
import json

from pao_core.config import PaoConfig
from pao_core.hookspecs import hookimpl
from pao_core.output import print_json


@hookimpl
def pao_add_commands(subparsers: argparse._SubParsersAction, config: PaoConfig) -> None:
    plugins_parser = subparsers.add_parser("plugins", help="list plugins, their hooks and load failures")
    plugins_parser.add_argument("--json", action="store_true", help="print JSON")
    plugins_parser.set_defaults(func=show_plugins)

    config_parser = subparsers.add_parser("config", help="show the effective configuration (secrets masked)")
    config_parser.add_argument("--json", action="store_true", help="print JSON")
    config_parser.add_argument("--path", action="store_true",
                               help="print where the configuration file is read from (works with a broken file)")
    config_parser.set_defaults(func=show_config, tolerates_config_error=True)

    completion = subparsers.add_parser("completion", help="print the shell completion script (bash, zsh, fish)")
    completion.add_argument("shell", choices=("bash", "zsh", "fish"), help="the shell to complete in")
    completion.set_defaults(func=show_completion, tolerates_config_error=True)


def show_completion(args: argparse.Namespace, config: PaoConfig) -> int:
    """argcomplete's script for the shell: it runs ``pao`` with ``_ARGCOMPLETE`` set, which ``cli`` answers."""
    import argcomplete  # only this command needs it

    print(argcomplete.shellcode(["pao"], shell=args.shell), end="")
    return 0


def plugin_report(config: PaoConfig) -> dict:
    """Plugins, their hooks, what plugins say of each (``pao_plugin_report``), and failures."""
    from pao_core.plugins import get_plugins  # pluggy, entry points: loaded on use

    plugins = get_plugins()
    rows = plugins.describe()
    for row in rows:
        row["lines"] = []
        for found in plugins.call("pao_plugin_report", plugin=row["name"], hooks=row["hooks"], config=config,
                                  plugins=plugins):
            if isinstance(found, dict):
                row["lines"] += [str(line) for line in found.get("lines", ())]
                row.update((key, value) for key, value in found.items() if key not in row)
    failures = [{"plugin": f.plugin, "stage": f.stage, "error": f.error} for f in plugins.failures]
    return {"plugins": rows, "failures": failures}


def show_plugins(args: argparse.Namespace, config: PaoConfig) -> int:

    report = plugin_report(config)
    if args.json:
        print_json(report)
        return 0
    for row in report["plugins"]:
        source = row["distribution"] or "?"
        if row["version"]:
            source += f" {row['version']}"
        print(f"{row['name']}  ({source}{', default' if row['default'] else ''})")
        print(f"    hooks: {', '.join(row['hooks']) or '-'}")
        for line in row["lines"]:
            print(f"    {line}")
    for failure in report["failures"]:
        print(f"FAILED {failure['plugin']} ({failure['stage']}): {failure['error']}")
    return 0


def show_config(args: argparse.Namespace, config: PaoConfig) -> int:
    from pao_core.paths import config_path  # only this path needs it: start-up stays light

    if args.path:
        path = config_path()
        if args.json:
            print_json({"path": str(path), "exists": path.exists(), "home": str(config.home)})
        else:
            print(path)
        return 0
    if args.config_error is not None:
        raise args.config_error
    data = config.masked()
    if args.json:
        print_json(data)
        return 0
    for key, value in _flatten(data):
        print(f"{key} = {json.dumps(value, ensure_ascii=False)}")
    return 0



def _flatten(data: dict, prefix: str = "") -> list[tuple[str, object]]:
    rows: list[tuple[str, object]] = []
    for key, value in data.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            rows.extend(_flatten(value, dotted + "."))
        else:
            rows.append((dotted, value))
    return rows
