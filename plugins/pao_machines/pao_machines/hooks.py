"""pao-machines' hooks: the router that sends commands to other machines, and ``pao machine``.

This module is imported by every ``pao`` command (the router is asked first), so it
imports nothing of its own until a command on an agent, ``list``, ``broadcast`` or
``spawn --on`` needs it.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from typing import TYPE_CHECKING, Any, Sequence

from pao_core.contracts import CommandRouter
from pao_core.errors import ValidationError
from pao_core.hookspecs import hookimpl
from pao_core.output import print_json, print_table

if TYPE_CHECKING:
    from pao_core.config import PaoConfig
    from pao_agents.spec import AgentRecord


ROUTED = frozenset({"spawn", "list", "broadcast", "status", "send", "kill", "pause", "resume", "checkpoint", "attach"})
"""Commands that may run on another machine (an agent's, or ``spawn --on``) or ask every machine (``list``)."""

_here_only = False
"""Set by ``pao machine here``: this process runs its command on this machine, never elsewhere."""


class MachineRouter(CommandRouter):
    """Sends an agent's command to its machine; ``spawn --on``; ``list`` and ``broadcast`` across machines."""

    name = "machines"
    commands = ROUTED

    def route(self, args: argparse.Namespace, config: PaoConfig) -> int | None:
        command = getattr(args, "command", None)
        if _here_only or command not in ROUTED or (command == "spawn" and not getattr(args, "on", None)):
            return None
        if command == "list":
            return _list(args, config)
        from pao_machines.route import route  # the routing itself: only for the commands it may take

        return route(args, config)

    def observe(self, records: Sequence[AgentRecord], config: PaoConfig) -> dict[str, dict[str, Any]]:
        """Each of ``records`` on another machine as ``pao list`` shows it: its machine asked now."""
        from pao_agents.spec import machine_name  # the [machine] table's class: not for every command's router

        if _here_only or all(record.machine in ("", machine_name(config)) for record in records):
            return {}
        from pao_machines.listing import remote_rows  # ssh: only when an agent runs on another machine

        return remote_rows(config, records)[0]


def _list(args: argparse.Namespace, config: PaoConfig) -> int:
    """``pao list``: pao-agents' own list while every agent runs here (the registry read once, no ssh)."""
    from pao_agents.spec import show_list  # the agents' list: only for this command
    from pao_agents.spec import Agents  # the registry and the terminals: only for the commands it may take

    agents = Agents.open(config)
    records = agents.registry.list()
    if all(agents.runs_here(record) for record in records):
        return show_list(args, config, agents, records)
    from pao_machines.listing import list_all  # ssh: only when an agent runs on another machine

    return list_all(args, config, agents, records)


@hookimpl
def pao_command_routers(config: PaoConfig) -> list[CommandRouter]:
    return [MachineRouter()]


@hookimpl
def pao_add_commands(subparsers: argparse._SubParsersAction, config: PaoConfig) -> None:
    machine = subparsers.add_parser("machine", help="other machines agents run on: check one, list them")
    commands = machine.add_subparsers(dest="machine_command", metavar="SUBCOMMAND", required=True,
                                      parser_class=type(machine))
    check = commands.add_parser("check", help="connect to TARGET and run its pao twice: is it ready for spawn --on?")
    check.add_argument("target", metavar="TARGET", help="[user@]host, ssh://user@host:port or a [machines.NAME]")
    check.add_argument("--json", action="store_true", help="print the result as one JSON object")
    check.set_defaults(func=run_check)
    listing = commands.add_parser("list", help="the machines configured under [machines.NAME]")
    listing.add_argument("--json", action="store_true", help="print JSON")
    listing.set_defaults(func=run_machines)
    version = commands.add_parser("version", help="this machine's pao, tmux and agent CLIs (what check reads)")
    version.add_argument("--json", action="store_true", help="print JSON")
    version.set_defaults(func=run_version)
    here = commands.add_parser("here", help="run a pao command on this machine only (what other machines call)")
    here.add_argument("argv", nargs=argparse.REMAINDER, metavar="-- COMMAND ...")
    here.set_defaults(func=run_here_command)
    encoded = commands.add_parser("run", help="run a pao command on this machine only, its words encoded (what "
                                  "other machines call when a login shell could change a word)")
    encoded.add_argument("words", metavar="WORDS", help="base64url of the command's words, NUL-joined")
    encoded.set_defaults(func=run_encoded_command)
    echo = commands.add_parser("echo", help="print WORDS as they arrived, as JSON (machine check sends words)")
    echo.add_argument("words", nargs=argparse.REMAINDER, metavar="-- WORD ...")
    echo.set_defaults(func=run_echo)


def _after_dashes(words: list[str]) -> list[str]:
    return words[1:] if words[:1] == ["--"] else words


def run_here_command(args: argparse.Namespace, config: PaoConfig) -> int:
    """``pao machine here -- ARGV``: run a pao command on this machine only (what other machines call)."""
    return _run_here(_after_dashes(args.argv))


def run_encoded_command(args: argparse.Namespace, config: PaoConfig) -> int:
    """``pao machine run -- WORDS``: ``pao machine here`` for a command line no shell has read."""
    from pao_machines.words import decode  # only this command needs it

    return _run_here(decode(args.words))


def _run_here(argv: list[str]) -> int:
    global _here_only
    from pao_core.cli import main  # the command line itself, run again in this process

    if not argv or argv[0] == "machine" and len(argv) > 1 and argv[1] in ("here", "run"):
        raise ValidationError("pao machine here -- COMMAND ...: name a pao command to run on this machine")
    _here_only = True
    return main(argv)


def run_echo(args: argparse.Namespace, config: PaoConfig) -> int:
    import json  # not needed until this runs: start-up stays light

    print(json.dumps({"words": _after_dashes(args.words)}))  # ASCII: whatever this machine's locale
    return 0


def run_check(args: argparse.Namespace, config: PaoConfig) -> int:
    from pao_machines.check import check  # not needed until this runs: start-up stays light

    report = check(config, args.target)
    if args.json:
        print_json(report)
    else:
        for line in report["lines"]:
            print(line)
    return 0 if report["ok"] else 1


def run_machines(args: argparse.Namespace, config: PaoConfig) -> int:
    from pao_machines.targets import configured  # not needed until this runs: start-up stays light

    machines = {name: configured(config, name) for name in sorted(config.machines)}
    if args.json:
        import attrs  # not needed until this runs: start-up stays light

        print_json({"machines": {name: attrs.asdict(options) for name, options in machines.items()}})
        return 0
    if not machines:
        print("pao: no machines configured; add [machines.NAME] to your config (docs/machines.md)", file=sys.stderr)
        return 0
    print_table(["NAME", "DESTINATION", "PAO", "DEADLINE"],
                [[name, f"{o.user + '@' if o.user else ''}{o.host}{':' + str(o.port) if o.port else ''}", o.pao,
                  f"{o.deadline:g}s"] for name, o in machines.items()])
    return 0


def run_version(args: argparse.Namespace, config: PaoConfig) -> int:
    import subprocess  # not needed until this runs: start-up stays light
    from importlib.metadata import version  # not needed until this runs: start-up stays light

    from pao_agents.spec import Agents, host_agents, machine_name  # not needed until this runs: start-up stays light

    tmux = shutil.which("tmux")
    report = {
        "pao": version("pao-core"),
        "machine": machine_name(config),
        "tmux": subprocess.run([tmux, "-V"], capture_output=True, text=True).stdout.strip() if tmux else None,
        "hosts": {host.name: host.version() for host in host_agents(Agents.open(config).plugins, config)},
    }
    if args.json:
        print_json(report)
    else:
        for key, value in report.items():
            print(f"{key:<10}{value}")
    return 0
