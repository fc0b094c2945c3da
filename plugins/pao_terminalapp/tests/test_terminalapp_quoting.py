"""Hostile folders and arguments: what the driver hands Terminal.app, typed into real shells.

Terminal.app's ``do script`` types the line into the tab's interactive login shell.
These tests take the exact line the driver gave the (fake) Terminal.app and type it
into real interactive zsh (macOS's default), bash and sh on a real pseudo-terminal,
then check where the agent command started and what it received.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pao_core.errors import ValidationError
from pao_terminalapp.driver import PasteTimes, TerminalAppDriver
from pao_terminalapp.testing import FakeClock, FakeMac

HOSTILE = [
    "with space",
    "it's",
    'double "quoted"',
    "$HOME and ${PATH}",
    "`id` and $(id)",
    "ünïcødé 日本語 🚀",
    "semi; rm -rf x && echo || true",
    "-starts-with-dash",
    "back\\slash\\\\",
    "glob *?[a]",
    "~tilde",
    "!bang !! !$",
    "percent %s %n",
    "<in >out |pipe &bg",
    "#hash",
    "'\"`$\\ all of them",
]
SHELLS = {
    "zsh": ["zsh", "-f", "-i"],
    "bash": ["bash", "--norc", "--noprofile", "-i"],
    "sh": ["sh", "-i"],
}
PROMPT = "PAO-READY> "
RECORDER = (
    "import json, os, sys; "
    "open(sys.argv[1], 'w', encoding='utf-8').write(json.dumps([os.getcwd(), sys.argv[2:], os.environ['PAO_T']]))"
)


def spawned_line(folder: str, command: list[str], env: dict[str, str]) -> str:
    """The line the driver asks Terminal.app to type, taken from the fake's call log."""
    mac, clock = FakeMac(), FakeClock()
    driver = TerminalAppDriver(
        connect=lambda: mac.apps, probe=lambda: None, clock=clock, sleep=clock.sleep, paste_times=PasteTimes()
    )
    driver.spawn("agent", folder, command, env)
    tab = mac.windows[0].tabs[0]
    assert tab.contents.endswith("\n") and tab.contents.count("\n") == 1
    return tab.contents[:-1]


def type_into_shell(shell: list[str], line: str, home: Path, done: Path) -> str:
    """Start an interactive shell on a pty, type ``line`` and Return, wait for ``done``."""
    master, slave = os.openpty()
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "LANG": "C.UTF-8", "TERM": "xterm", "PS1": PROMPT}
    shell_process = subprocess.Popen(
        shell, stdin=slave, stdout=slave, stderr=slave, env=env, cwd="/", start_new_session=True
    )
    os.close(slave)
    screen, typed = b"", False
    deadline = time.monotonic() + 20
    try:
        while time.monotonic() < deadline and not (done.exists() and shell_process.poll() is not None):
            ready, _, _ = select.select([master], [], [], 0.1)
            if ready:
                try:
                    screen += os.read(master, 65536)
                except OSError:  # the shell (now the agent command) ended
                    pass
            if not typed and PROMPT.encode() in screen:
                os.write(master, line.encode("utf-8") + b"\r")
                typed = True
    finally:
        if shell_process.poll() is None:
            shell_process.kill()
        shell_process.wait(timeout=10)
        os.close(master)
    return screen.decode("utf-8", "replace")


@pytest.mark.parametrize("shell", sorted(SHELLS))
def test_hostile_folders_and_arguments_survive_the_login_shell(tmp_path: Path, shell: str) -> None:
    home = tmp_path / "home"
    home.mkdir()
    for index, name in enumerate(HOSTILE):
        folder = tmp_path / name
        folder.mkdir()
        done = tmp_path / f"done-{shell}-{index}.json"
        argument = f"arg {name}"
        line = spawned_line(str(folder), [sys.executable, "-c", RECORDER, str(done), argument, name], {"PAO_T": name})

        screen = type_into_shell(SHELLS[shell], line, home, done)

        assert done.exists(), f"{shell} did not run the agent command for {name!r}; screen:\n{screen[-2000:]}"
        cwd, argv, env_value = json.loads(done.read_text(encoding="utf-8"))
        assert (cwd, argv, env_value) == (str(folder), [argument, name], name)


def test_the_line_is_exactly_cd_then_exec(tmp_path: Path) -> None:
    line = spawned_line("/Users/me/my 'app'", ["claude", "--flag"], {"A": "$x"})
    assert line == """cd -- '/Users/me/my '"'"'app'"'"'' && exec env 'A=$x' claude --flag"""


@pytest.mark.parametrize(
    ("folder", "command", "env", "what"),
    [
        ("/tmp/two\nlines", ["claude"], {}, "folder"),
        ("/tmp/tab\there", ["claude"], {}, "folder"),
        ("/tmp/escape\x1b[2J", ["claude"], {}, "folder"),
        ("/tmp/ok", ["claude", "line\rbreak"], {}, "command"),
        ("/tmp/ok", ["claude"], {"KEY": "va\nlue"}, "environment variable KEY"),
    ],
)
def test_control_characters_are_refused_before_terminal_is_touched(
    folder: str, command: list[str], env: dict[str, str], what: str
) -> None:
    mac = FakeMac()
    driver = TerminalAppDriver(connect=lambda: mac.apps, probe=lambda: None)
    with pytest.raises(ValidationError, match=rf"^the {what} contains a control character .* would type as a key"):
        driver.spawn("agent", folder, command, env)
    assert mac.calls == []


@pytest.mark.parametrize("name", ["1ABC", "A-B", "A B", "A=B", ""])
def test_bad_environment_names_are_refused(name: str) -> None:
    mac = FakeMac()
    driver = TerminalAppDriver(connect=lambda: mac.apps, probe=lambda: None)
    with pytest.raises(ValidationError, match="environment variable name"):
        driver.spawn("agent", "/tmp", ["claude"], {name: "x"})
    assert mac.calls == []


def test_an_empty_command_is_refused() -> None:
    mac = FakeMac()
    driver = TerminalAppDriver(connect=lambda: mac.apps, probe=lambda: None)
    with pytest.raises(ValidationError, match="no command"):
        driver.spawn("agent", "/tmp", [], {})
    assert mac.calls == []
