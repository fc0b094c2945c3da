"""Each hook reaches pao through its typed call site (more hook tests live beside the features)."""

from __future__ import annotations

import argparse

import attrs
import pytest

from pao_agents.spec import TerminalDriver, terminal_drivers
from pao_core import hookimpl
from pao_core.cli import build_parser
from pao_core.commands.info import plugin_report
from pao_core.plugins import load_config
from pao_core.hookspecs import hookspec
from pao_core.plugins import Plugins, get_plugins


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
@pytest.mark.hook("pao_plugin_report")
def test_terminal_drivers_report_their_availability(registered) -> None:
    registered(Drivers(), "drivers-plugin")
    config = load_config()
    names = [d.name for d in terminal_drivers(get_plugins(), config)]  # installed driver plugins come too
    assert names[names.index("here"):][:2] == ["here", "elsewhere"]
    row = next(r for r in plugin_report(config)["plugins"] if r["name"] == "drivers-plugin")
    assert row["terminal_drivers"] == [
        {"name": "here", "available": True, "reason": None},
        {"name": "elsewhere", "available": False, "reason": "needs a Mac"},
    ]


class GreetingHooks:
    """A plugin's own hook specification."""

    @hookspec
    def pao_greetings(self, who: str) -> str | None:
        """Say hello."""


class AddsGreetings:
    @hookimpl
    def pao_addhooks(self, pluginmanager):
        pluginmanager.add_hookspecs(GreetingHooks)


class Greets:
    @hookimpl
    def pao_greetings(self, who):
        return f"hello {who}"


@pytest.mark.hook("pao_addhooks")
def test_a_plugin_adds_hooks_that_others_implement_and_are_checked() -> None:
    plugins = Plugins()
    plugins.manager.register(Greets(), name="greets")  # before the hook is known: checked once it is
    plugins.manager.register(AddsGreetings(), name="adds")
    assert plugins.manager.hook.pao_greetings.spec is not None
    assert plugins.call("pao_greetings", who="ann") == ["hello ann"]
    adder = plugins.manager.unregister(name="adds")
    plugins.manager.register(adder, name="adds")  # registered again (as loading on use does): added once
    assert plugins.call("pao_greetings", who="bo") == ["hello bo"]
    assert plugins.failures == []


def test_the_agent_hooks_come_from_pao_agents_not_the_core() -> None:
    from pao_core import hookspecs

    plugins = get_plugins()
    plugins.load("pao_addhooks")
    assert not hasattr(hookspecs, "pao_host_agents")
    assert plugins.manager.hook.pao_host_agents.spec.namespace.__name__ == "pao_agents.spec.hookspecs"
