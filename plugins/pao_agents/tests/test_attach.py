"""``pao attach``: a real tmux client, attached inside another tmux server's pane (both on private sockets)."""

from __future__ import annotations

import os
import shlex
import sys
import time
from typing import Callable, Iterator

import pytest

from pao_testing.lifecycle.fixtures import RUN_PAO, Pao, pao  # noqa: F401  (fixture)
from pao_testing.terminal import Tmux, user_terminal

ENV_KEYS = ("PAO_HOME", "HOME", "PAO_TMUX_SOCKET", "PAO_LOAD_PLUGINS", "PAO_CONFIG", "PATH")


def _until(condition: Callable[[], bool], what: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


def _pao_line(pao: Pao, *args: str) -> str:
    """A shell line that runs ``pao ARGS`` (with the fake host) in this test's environment, wherever it is typed."""
    env = [f"{key}={os.environ[key]}" for key in ENV_KEYS if key in os.environ]
    return shlex.join(["env", *env, sys.executable, RUN_PAO, *args]) + f"; echo pao-exited-$?"


@pytest.fixture
def outer() -> Iterator[Tmux]:
    """Another tmux server (the user's own tmux, say), with one 100x30 window."""
    with user_terminal() as tmux:
        yield tmux


def _clients(pao: Pao) -> list[str]:
    return pao.tmux("list-clients", "-F", "#{client_session} #{window_name}").stdout.split("\n")[:-1]


def test_attach_from_another_tmux_nests_a_client_and_returns_on_detach(pao: Pao, outer) -> None:
    for name in ("one", "two"):
        code, _, err = pao("spawn", "look around", "--folder", str(pao.folder(name)), "--name", name, "--no-nudge")
        assert code == 0, err
        assert f"pao: attach with: pao attach {name}\n" in err
    assert _clients(pao) == []
    outer("send-keys", "-t", "user", _pao_line(pao, "attach", "one"), "Enter")
    _until(lambda: _clients(pao) == ["pao one"], "a client of pao's server showing agent one")
    _until(lambda: "? for shortcuts" in outer("capture-pane", "-p", "-t", "user").stdout, "the agent's screen in the outer pane")
    pao.tmux("detach-client", "-s", "pao")
    _until(lambda: "pao-exited-0" in outer("capture-pane", "-p", "-t", "user").stdout, "pao attach to exit 0")
    assert _clients(pao) == []


def test_attach_inside_paos_own_tmux_switches_the_client(pao: Pao, outer) -> None:
    for name in ("one", "two"):
        assert pao("spawn", "look around", "--folder", str(pao.folder(name)), "--name", name, "--no-nudge")[0] == 0
    # a client of pao's server, looking at agent one, in the outer server's pane
    outer("send-keys", "-t", "user", f"env -u TMUX tmux -L {pao.socket} attach -t %0", "Enter")
    _until(lambda: _clients(pao) == ["pao one"], "the user's client on agent one")
    # the user opens a shell window in pao's session and runs pao attach there
    assert pao.tmux("new-window", "-d", "-t", "pao:", "-n", "shell", _pao_line(pao, "attach", "two") + "; sleep 30").returncode == 0
    _until(lambda: _clients(pao) == ["pao two"], "the same client switched to agent two")
    assert len(_clients(pao)) == 1


def test_attach_names_what_is_wrong(pao: Pao) -> None:
    code, _, err = pao("attach", "nobody")
    assert (code, err) == (1, "pao: no agent named 'nobody' (see 'pao list')\n")
    assert pao("spawn", "look around", "--folder", str(pao.folder("one")), "--name", "one", "--no-nudge")[0] == 0
    code, _, err = pao("attach", "one")  # pytest's stdin is no terminal: said in one line, before tmux is asked
    assert code == 1 and err.startswith("pao: cannot attach pao-test-") and err.count("\n") == 1, err
    assert err.endswith(": this is not a terminal (run pao attach in one)\n"), err
    pao.tmux("kill-server")
    code, _, err = pao("attach", "one")
    assert code == 1 and "is not running" in err and "'pao resume one'" in err
