"""``pao monitor``: the interactive list on a terminal, a plain table or JSON elsewhere.

Textual is imported only when the interactive monitor starts: no other command pays
for it, and ``pao monitor --once --json`` does not either.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import TYPE_CHECKING

from pao_core.hookspecs import hookimpl
from pao_core.output import print_json

if TYPE_CHECKING:
    from pao_core.config import PaoConfig


@hookimpl
def pao_add_commands(subparsers: argparse._SubParsersAction, config: PaoConfig) -> None:
    monitor = subparsers.add_parser(
        "monitor", help="every agent in one interactive list: attach, send, pause, resume, kill",
        description="On a terminal: a list of every agent (machine, host, state, age, last event, topic), refreshed; "
        "keys: a attach, s send, p pause, r resume, k kill, q quit. Elsewhere, or with --once/--json: a table.",
    )
    monitor.add_argument("--once", action="store_true", help="print the table once and exit")
    monitor.add_argument("--json", action="store_true", help="print the states once as one JSON object")
    monitor.add_argument("--interval", type=float, default=1.0, metavar="SECONDS", help="refresh period (default 1)")
    monitor.set_defaults(func=run_monitor)


def run_monitor(args: argparse.Namespace, config: PaoConfig) -> int:
    from pao_agents.spec import Agents  # not needed until this runs: start-up stays light

    agents = Agents.open(config)
    interval = max(0.1, args.interval)
    if not (args.once or args.json) and sys.stdin.isatty() and sys.stdout.isatty():
        from pao_monitor.app import MonitorApp  # Textual: only here

        MonitorApp(agents, interval=interval).run()
        return 0
    return _plain(agents, args, interval)


def _plain(agents: object, args: argparse.Namespace, interval: float) -> int:
    from pao_agents.spec import record_json  # not needed until this runs: start-up stays light
    from pao_monitor.rows import observe_all, print_rows  # not needed until this runs: start-up stays light

    while True:
        rows = observe_all(agents)
        if args.json:
            print_json({"agents": [{**record_json(row.observation.record, row.observation), "machine": row.machine,
                                    "last_event": row.last_event} for row in rows]})
            return 0
        print_rows(rows)
        if args.once:
            return 0
        sys.stdout.flush()
        time.sleep(interval)
