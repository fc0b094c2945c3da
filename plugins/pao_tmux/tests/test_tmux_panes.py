"""``live_panes``, the one read-only tmux query of the light ``pao list``, says what the driver's ``is_alive``
says of every pane, against real tmux on a private socket."""

from __future__ import annotations

import subprocess
import time

from pao_testing.claude_cli import PrivateTmux
from pao_tmux.driver import TmuxDriver
from pao_tmux.panes import live_panes, socket_args, split_target


def _tmux(socket: str, *args: str) -> str:
    return subprocess.run(["tmux", "-L", socket, *args], capture_output=True, text=True, check=True).stdout.strip()


def test_live_panes_agree_with_the_driver_pane_by_pane(private_tmux: PrivateTmux) -> None:
    socket = private_tmux.socket
    assert live_panes(socket) == set()  # no server on the socket: every pane of it is gone
    first = _tmux(socket, "new-session", "-d", "-P", "-F", "#{pane_id}", "sleep 600", ";",
                  "set-option", "-g", "remain-on-exit", "on")
    second = _tmux(socket, "new-window", "-P", "-F", "#{pane_id}", "sleep 600")
    third = _tmux(socket, "split-window", "-P", "-F", "#{pane_id}", "sleep 600")
    gone = _tmux(socket, "new-window", "-P", "-F", "#{pane_id}", "sleep 600")
    _tmux(socket, "respawn-pane", "-k", "-t", second, "true")  # its process ends; tmux keeps the pane, dead
    _tmux(socket, "kill-pane", "-t", gone)
    deadline = time.monotonic() + 10
    while _tmux(socket, "display-message", "-p", "-t", second, "#{pane_dead}") != "1":
        assert time.monotonic() < deadline, "the respawned pane's process did not end"
        time.sleep(0.02)
    live = live_panes(socket)
    assert live == {first, third}
    driver = TmuxDriver()
    for pane in (first, second, third, gone, "%999"):
        assert driver.is_alive(f"{socket}:{pane}") == (pane in live), pane


def test_targets_and_sockets() -> None:
    assert split_target("pao:%3") == ("pao", "%3")
    assert split_target("a:b:%3") is None and split_target("pao:3") is None and split_target("") is None
    assert socket_args("default") == [] and socket_args("pao") == ["-Lpao"]
