"""``pao doctor [--json]``: what the next spawn needs, checked; exit 1 when something it needs is broken."""

from __future__ import annotations

import argparse

from pao_core.config import PaoConfig
from pao_core.hookspecs import hookimpl
from pao_core.output import print_json

MARKS = {"ok": "ok  ", "warn": "WARN", "fail": "FAIL"}


@hookimpl
def pao_add_commands(subparsers: argparse._SubParsersAction, config: PaoConfig) -> None:
    parser = subparsers.add_parser("doctor", help="check what the next spawn needs; say what to do about each problem")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.add_argument("--query", default=None, metavar="TEXT",
                        help="the test query sent to each memory store (default: test)")
    parser.set_defaults(func=run_doctor)


def run_doctor(args: argparse.Namespace, config: PaoConfig) -> int:
    from pao_core.doctor import DEFAULT_QUERY, run_checks  # loaded on use, not at start-up
    from pao_core.plugins import get_plugins  # pluggy, entry points: loaded on use
    from pao_core.sanitize import strip_controls  # only this path needs it: start-up stays light

    report = run_checks(config, get_plugins(), query=args.query or DEFAULT_QUERY)
    if args.json:
        print_json(report.as_json())
    else:
        for check in report.checks:
            # lines quote files and servers: nothing in them may drive the terminal
            print(f"{MARKS[check.status]}  {check.area:<12} {strip_controls(check.line)}")
            if check.fix and check.status != "ok":
                print(f"{'':18}-> {strip_controls(check.fix)}")
        failed = sum(check.status == "fail" for check in report.checks)
        warned = sum(check.status == "warn" for check in report.checks)
        verdict = "the next spawn should work" if not failed else "the next spawn needs the FAIL lines fixed"
        print(f"\n{failed} failed, {warned} warnings: {verdict}")
    return 1 if report.failed else 0
