"""The interactive monitor, driven by Textual's own harness (``App.run_test()`` and Pilot) against real agents.

The agents are the fake agent of ``testing/pao_testing/lifecycle`` in a real tmux server on a
private socket; the attach key runs in a real terminal (a pane of another tmux server).
"""

from __future__ import annotations

import asyncio
import os
import shlex
import subprocess
import sys
import time
import uuid
from typing import Callable

from pao_testing.lifecycle.fake_host import received
from pao_testing.lifecycle.fixtures import RUN_PAO, Pao, pao  # noqa: F401  (fixture)
from pao_agents.spec import Agents
from pao_agents.spec import JsonRegistry
from pao_monitor.app import MonitorApp
from textual.widgets import DataTable


def _agents(pao: Pao) -> Agents:
    from pao_core.plugins import load_config
    from pao_core.plugins import get_plugins

    return Agents.open(load_config(), get_plugins())


async def _until(pilot, condition: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            app = pilot.app
            raise AssertionError(f"timed out waiting for {what}; the list shows {_cells(app)}, "
                                 f"cursor row {app.query_one(DataTable).cursor_row}")
        await pilot.pause(0.1)


def _cells(app: MonitorApp) -> dict[str, list[str]]:
    table = app.query_one(DataTable)
    return {str(table.get_row_at(i)[0]): [str(c) for c in table.get_row_at(i)] for i in range(table.row_count)}


def test_the_list_shows_every_agent_and_keys_act_on_the_selected_one(pao: Pao) -> None:
    for name in ("one", "two"):
        assert pao("spawn", "look around", "--folder", str(pao.folder(name)), "--name", name, "--no-nudge")[0] == 0
    registry = JsonRegistry(pao.home)

    async def drive() -> None:
        app = MonitorApp(_agents(pao), interval=0.5)
        async with app.run_test(size=(160, 30)) as pilot:
            await _until(pilot, lambda: set(_cells(app)) == {"one", "two"}, "both agents listed")
            one = _cells(app)["one"]
            assert one[2:4] == ["fake", "ready"] and one[6:8] == ["look around", str(pao.workdir / "one")]
            assert one[1]  # the machine

            await pilot.press("down")  # select "two"
            await pilot.press("s")
            await pilot.press(*"hello from the monitor")
            await pilot.press("enter")
            await _until(pilot, lambda: [m["text"] for m in received(pao.workdir / "two")] == ["hello from the monitor"],
                         "the text to reach agent two")
            assert received(pao.workdir / "one") == []

            await pilot.press("p")
            await _until(pilot, lambda: registry.get("two").state == "paused", "agent two paused")
            await _until(pilot, lambda: _cells(app)["two"][3] == "paused", "the list to show it paused")
            await pilot.press("r")
            await _until(pilot, lambda: registry.get("two").state == "ready", "agent two resumed")

            await pilot.press("k")
            await pilot.press("escape")  # cancelled: nothing happens
            await pilot.pause(0.5)
            assert registry.find("two") is not None
            await pilot.press("k", "y", "enter")
            await _until(pilot, lambda: registry.find("two") is None, "agent two killed")
            await _until(pilot, lambda: set(_cells(app)) == {"one"}, "the list without agent two")
            await pilot.press("q")

    asyncio.run(drive())
    assert pao.tmux("list-windows", "-a", "-F", "#{window_name}").stdout.split() == ["one"]


def test_an_action_that_fails_is_shown_and_the_monitor_keeps_running(pao: Pao) -> None:
    assert pao("spawn", "look around", "--folder", str(pao.folder("one")), "--name", "one", "--no-nudge")[0] == 0

    async def drive() -> None:
        app = MonitorApp(_agents(pao), interval=0.5)
        async with app.run_test(size=(160, 30)) as pilot:
            await _until(pilot, lambda: "one" in _cells(app), "the agent listed")
            await pilot.press("r")  # it is running: nothing to resume
            await _until(pilot, lambda: any("nothing to resume" in str(n.message) for n in app._notifications),
                         "the error shown")
            assert app.is_running and _cells(app)["one"][3] == "ready"

    asyncio.run(drive())


def test_attach_key_in_a_real_terminal_returns_to_the_monitor(pao: Pao) -> None:
    assert pao("spawn", "look around", "--folder", str(pao.folder("one")), "--name", "one", "--no-nudge")[0] == 0
    outer_socket = f"pao-outer-{os.getpid()}-{uuid.uuid4().hex[:6]}"

    def outer(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["tmux", "-L", outer_socket, *args], capture_output=True, text=True, check=False)

    keys = ("PAO_HOME", "HOME", "PAO_TMUX_SOCKET", "PAO_LOAD_PLUGINS", "PAO_CONFIG", "PATH")
    env = [f"{key}={os.environ[key]}" for key in keys if key in os.environ]
    line = shlex.join(["env", *env, "TERM=xterm-256color", sys.executable, RUN_PAO, "monitor"])
    started = outer("-f", "/dev/null", "new-session", "-d", "-s", "user", "-x", "150", "-y", "30", line)
    assert started.returncode == 0, started.stderr
    try:
        screen = lambda: outer("capture-pane", "-p", "-t", "user").stdout  # noqa: E731
        clients = lambda: pao.tmux("list-clients", "-F", "#{window_name}").stdout.split()  # noqa: E731
        _wait(lambda: "one" in screen() and "ready" in screen(), "the monitor listing agent one", shown=screen)
        outer("send-keys", "-t", "user", "a")
        _wait(lambda: clients() == ["one"], "a client of pao's server on agent one")
        _wait(lambda: "? for shortcuts" in screen(), "the agent's screen")
        pao.tmux("detach-client", "-s", "pao")
        _wait(lambda: "pao monitor" in screen() and clients() == [], "the monitor back after detaching")
        outer("send-keys", "-t", "user", "q")
        _wait(lambda: outer("list-sessions").returncode != 0, "the monitor to quit")
    finally:
        outer("kill-server")


def _wait(condition: Callable[[], bool], what: str, timeout: float = 40.0, shown: Callable[[], str] = str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}; the terminal shows:\n{shown()}")
        time.sleep(0.2)


def test_textual_stays_off_every_other_command(pao: Pao) -> None:
    probe = ("import sys; from pao_core.cli import main; codes = [main(a) for a in (['list'], ['monitor', '--once'], "
             "['monitor', '--json'])]; print(codes, sorted({m.split('.')[0] for m in sys.modules} & {'textual', 'rich'}))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, cwd=pao.workdir)
    assert done.stdout.splitlines()[-1] == "[0, 0, 0] []", done.stderr
