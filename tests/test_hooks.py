"""Each hook reaches pao through its typed call site (more hook tests live beside the features)."""

from __future__ import annotations

import argparse

import attrs
import pytest

from pao_core import hookimpl
from pao_core.cli import build_parser
from pao_core.commands.info import plugin_report
from pao_core.config import load_config
from pao_core.contracts import TerminalDriver
from pao_core.plugins import get_plugins


@pytest.fixture
def registered():
    """Register plugin objects on the process-wide manager; unregister them in ``finally``."""
    plugins = get_plugins()
    added = []

    def register(obj, name):
        plugins.manager.register(obj, name=name)
        added.append(obj)
        return obj

    try:
        yield register
    finally:
        for obj in added:
            plugins.manager.unregister(obj)


class GreetCommand:
    @hookimpl
    def pao_add_commands(self, subparsers: argparse._SubParsersAction, config):
        parser = subparsers.add_parser("greet")
        parser.add_argument("who")
        parser.set_defaults(func=lambda args, config: print(f"hello {args.who}") or 0)


@pytest.mark.hook("pao_add_commands")
def test_plugin_commands_join_the_cli(registered, capsys) -> None:
    from pao_core.cli import main

    registered(GreetCommand(), "greet-plugin")
    assert main(["greet", "sam"]) == 0
    assert capsys.readouterr().out == "hello sam\n"


def test_usage_errors_are_one_line(capsys) -> None:
    from pao_core.cli import main

    assert main(["brief"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "TOPIC" in err


@attrs.frozen
class FakeDriver(TerminalDriver):
    name: str
    reason: str | None

    def availability(self):
        return self.reason

    spawn = paste = press = read = is_alive = kill = None  # type: ignore[assignment]  # never started: listed only


class Drivers:
    @hookimpl
    def pao_terminal_drivers(self, config):
        return [FakeDriver("here", None), FakeDriver("elsewhere", "needs a Mac")]


@pytest.mark.hook("pao_terminal_drivers")
def test_terminal_drivers_report_their_availability(registered) -> None:
    registered(Drivers(), "drivers-plugin")
    config = load_config()
    names = [d.name for d in get_plugins().terminal_drivers(config)]  # installed driver plugins come too
    assert names[names.index("here"):][:2] == ["here", "elsewhere"]
    row = next(r for r in plugin_report(config)["plugins"] if r["name"] == "drivers-plugin")
    assert row["terminal_drivers"] == [
        {"name": "here", "available": True, "reason": None},
        {"name": "elsewhere", "available": False, "reason": "needs a Mac"},
    ]
