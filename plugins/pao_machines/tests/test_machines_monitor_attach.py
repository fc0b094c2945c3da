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
