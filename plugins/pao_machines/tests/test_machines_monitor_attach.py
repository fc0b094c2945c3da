"""Two machines, the real Claude Code CLI on the second: ``pao monitor`` shows an agent there in the state
its machine reports (the state ``pao list`` shows), not ``unknown``; ``pao attach`` shows it in this
terminal (a pane of a tmux server of the test's own) through ssh, and returns when the user detaches."""

from __future__ import annotations

import json
import shlex
import sys
import time
from typing import Callable, Iterator

import pytest

from pao_testing.anthropic_stub import AnthropicStub
from pao_testing.terminal import Tmux, user_terminal
from pao_testing.two_machines import RUN_PAO, Box

pytestmark = pytest.mark.realcli


def _states(box: Box, *command: str) -> dict[str, tuple[str, str]]:
    agents = json.loads(box.pao(*command, "--json").stdout)["agents"]
    return {agent["name"]: (agent["observed"]["state"], agent["machine"]) for agent in agents}


def test_the_monitor_shows_an_agent_on_another_machine_as_the_list_does(
    claude_box: Box, anthropic_stub: AnthropicStub
) -> None:
    box = claude_box
    box.remote_folder("shop")
    box.pao("spawn", "count the widgets", "--on", "box", "--folder", "~/shop", "--name", "shop")
    assert anthropic_stub.wait_for_message("count the widgets", 90, where=lambda r: r.is_conversation) is not None
    try:
        listed = _states(box, "list")
        assert listed["shop"][0] in ("busy", "ready", "waiting") and listed["shop"][1] == "box"
        assert _states(box, "monitor", "--once") == listed
        table = box.pao("monitor", "--once").stdout
        row = next(line for line in table.splitlines() if line.startswith("shop"))
        assert "box" in row.split() and listed["shop"][0] in row.split()

        box.pao("pause", "shop")
        assert _states(box, "monitor", "--once")["shop"] == ("paused", "box") == _states(box, "list")["shop"]
    finally:
        box.pao("kill", "shop", check=False)


def _until(condition: Callable[[], bool], what: str, shows: Callable[[], str], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}; the terminal shows:\n{shows()}")
        time.sleep(0.2)


@pytest.fixture
def terminal() -> Iterator[Tmux]:
    """The user's terminal, where they type ``pao attach``."""
    with user_terminal(120, 40) as tmux:
        yield tmux


def test_attach_to_an_agent_on_another_machine_shows_it_here_and_returns_on_detach(
    claude_box: Box, anthropic_stub: AnthropicStub, terminal
) -> None:
    box = claude_box
    box.remote_folder("shop")
    box.pao("spawn", "count the widgets", "--on", "box", "--folder", "~/shop", "--name", "shop")
    assert anthropic_stub.wait_for_message("count the widgets", 90, where=lambda r: r.is_conversation) is not None
    remote_tmux = ["tmux", "-L", box.sshd.environment["PAO_TMUX_SOCKET"]]
    clients = lambda: box.sshd.run_remote([*remote_tmux, "list-clients", "-F", "#{client_session}"]).stdout.split()  # noqa: E731
    screen = lambda: terminal("capture-pane", "-p", "-t", "user").stdout  # noqa: E731
    try:
        env = [f"{key}={value}" for key, value in box.local_env.items() if key in ("HOME", "PAO_HOME", "PAO_CONFIG", "PATH")]
        line = shlex.join(["env", *env, sys.executable, RUN_PAO, "attach", "shop"]) + "; echo pao-exited-$?"
        terminal("send-keys", "-t", "user", line, "Enter")
        _until(lambda: len(clients()) == 1, "a client of the remote machine's tmux", screen)
        _until(lambda: "count the widgets" in screen(), "the remote agent's screen in this terminal", screen)
        terminal("send-keys", "-t", "user", "C-b", "d")  # the user detaches: prefix, then d
        _until(lambda: "pao-exited-0" in screen(), "pao attach to return with 0 once detached", screen)
        assert clients() == []
    finally:
        box.pao("kill", "shop", check=False)


def test_the_monitor_s_keys_act_on_an_agent_on_another_machine(
    claude_box: Box, anthropic_stub: AnthropicStub, monkeypatch: pytest.MonkeyPatch
) -> None:
    import asyncio

    from textual.widgets import DataTable

    from pao_agents.spec import Agents
    from pao_core.plugins import load_config
    from pao_core.plugins import get_plugins, reset_plugins
    from pao_monitor.app import MonitorApp

    box = claude_box
    box.remote_folder("shop")
    box.pao("spawn", "count the widgets", "--on", "box", "--folder", "~/shop", "--name", "shop")
    assert anthropic_stub.wait_for_message("count the widgets", 90, where=lambda r: r.is_conversation) is not None
    for key in ("HOME", "PAO_HOME", "PAO_CONFIG"):
        monkeypatch.setenv(key, box.local_env[key])
    reset_plugins()
    remote_state = lambda: json.loads(box.remote_pao("list", "--json").stdout)["agents"][0]["state"]  # noqa: E731

    async def drive() -> None:
        app = MonitorApp(Agents.open(load_config(), get_plugins()), interval=0.5)

        def row() -> list[str]:
            table = app.query_one(DataTable)
            return [str(cell) for cell in table.get_row_at(0)] if table.row_count else []

        async def until(condition: Callable[[], bool], what: str, timeout: float = 60.0) -> None:
            deadline = time.monotonic() + timeout
            while not condition():
                if time.monotonic() > deadline:
                    raise AssertionError(f"timed out waiting for {what}; the row shows {row()}, "
                                         f"notifications {[str(n.message) for n in app._notifications]}")
                await pilot.pause(0.2)

        async with app.run_test(size=(160, 30)) as pilot:
            await until(lambda: row()[:2] == ["shop", "box"] and row()[3] in ("ready", "busy"), "shop listed")
            await pilot.press("s", *"also count the gears", "enter")
            await until(lambda: any("also count the gears" in m.text() for m in anthropic_stub.messages()), "the text to reach it")
            await pilot.press("p")
            # the monitor's row first: the remote check is an ssh round trip that blocks the event loop
            await until(lambda: row()[3] == "paused" and remote_state() == "paused", "shop paused on its machine")
            await pilot.press("r")
            await until(lambda: row()[3] != "paused" and remote_state() != "paused", "shop resumed", timeout=120)
            await pilot.press("k", "y", "enter")
            await until(lambda: not app.query_one(DataTable).row_count, "shop gone from the list")
            await pilot.press("q")

    try:
        asyncio.run(drive())
        assert json.loads(box.remote_pao("list", "--json").stdout)["agents"] == []
    finally:
        reset_plugins()
        box.pao("kill", "shop", check=False)
