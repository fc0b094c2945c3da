"""Hostile folders and arguments: what the driver hands Terminal.app, typed into real shells.

Terminal.app's ``do script`` types the line into the tab's interactive login shell.
These tests take the exact line the driver gave the (fake) Terminal.app and type it
into real interactive zsh (macOS's default), bash and sh on a real pseudo-terminal,
then check where the agent command started and what it received: the line starts
pao's launcher on a private spec file, so the command and environment never pass
through the shell.
"""

from __future__ import annotations

import json
import os
import select
import shlex
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pao_core.errors import PaoError, ValidationError
from pao_agents.spec import LAUNCHER_PATH
from pao_terminalapp.driver import PasteTimes, TerminalAppDriver
from pao_testing.terminalapp import FakeClock, FakeMac

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
    "open(sys.argv[1], 'w', encoding='utf-8').write(json.dumps([os.getcwd(), sys.argv[2:], dict(os.environ)]))"
)
SECRET = "sk-ant-SECRET-do-not-type-me-0123456789"
HISTORY_OPTIONS = {"zsh": ["-o", "incappendhistory"], "bash": []}
"""How each shell keeps a history file (dash, Debian's sh, keeps none): written before the line runs."""

pytestmark = pytest.mark.usefixtures("private_tmp")


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


def type_into_shell(
    shell: list[str], line: str, home: Path, done: Path, shell_env: dict[str, str] | None = None
) -> str:
    """Start an interactive shell on a pty, type ``line`` and Return, wait for ``done``; return the screen."""
    master, slave = os.openpty()
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "LANG": "C.UTF-8", "TERM": "xterm", "PS1": PROMPT}
    env.update(shell_env or {})
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
        cwd, argv, agent_env = json.loads(done.read_text(encoding="utf-8"))
        assert (cwd, argv, agent_env["PAO_T"]) == (str(folder), [argument, name], name)


@pytest.mark.parametrize("shell", sorted(SHELLS))
def test_the_environment_and_command_never_pass_through_the_shell(
    tmp_path: Path, private_tmp: Path, shell: str
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    done = tmp_path / "done.json"
    history = home / "history"
    env = {"ANTHROPIC_API_KEY": SECRET, "MULTI": "two\nlines\ttabbed", "TERM": "the-spawners-term", "LANG": "C.UTF-8"}
    line = spawned_line(str(tmp_path), [sys.executable, "-c", RECORDER, str(done), "line\rbreak"], env)
    (spec,) = private_tmp.iterdir()
    assert stat.S_IMODE(spec.stat().st_mode) == 0o600
    assert SECRET not in line and "ANTHROPIC_API_KEY" not in line and RECORDER not in line

    shell_env = {"CI": "true", "HISTFILE": str(history), "HISTSIZE": "100", "SAVEHIST": "100"}
    screen = type_into_shell([*SHELLS[shell], *HISTORY_OPTIONS.get(shell, [])], line, home, done, shell_env)

    assert done.exists(), f"{shell} did not run the agent command; screen:\n{screen[-2000:]}"
    _, argv, agent_env = json.loads(done.read_text(encoding="utf-8"))
    assert argv == ["line\rbreak"]
    assert agent_env == {**env, "TERM": "xterm"}  # no CI from the shell; the tab's own TERM
    assert not spec.exists()
    assert SECRET not in screen
    if shell in HISTORY_OPTIONS:
        kept = history.read_text(encoding="utf-8")
        assert LAUNCHER_PATH in kept and SECRET not in kept


def test_the_line_is_exactly_cd_then_exec(private_tmp: Path) -> None:
    line = spawned_line("/Users/me/my 'app'", ["claude", "--flag"], {"A": "$x"})
    (spec,) = private_tmp.iterdir()
    launcher = shlex.join([sys.executable, "-I", "-S", LAUNCHER_PATH, str(spec)])
    assert line == f"""cd -- '/Users/me/my '"'"'app'"'"'' && exec {launcher}"""
    assert json.loads(spec.read_text(encoding="utf-8")) == {"argv": ["claude", "--flag"], "env": {"A": "$x"}}


def refuses_before_touching_terminal(private_tmp: Path, error: type[PaoError], message: str, **spawn: object) -> None:
    """The spawn fails with one line ``message``; Terminal.app got no call and no spec file is left."""
    mac = FakeMac()
    driver = TerminalAppDriver(connect=lambda: mac.apps, probe=lambda: None)
    arguments = {"folder": "/tmp", "command": ["claude"], "env": {}, **spawn}
    with pytest.raises(error, match=message) as caught:
        driver.spawn("agent", **arguments)  # type: ignore[arg-type]
    assert "\n" not in str(caught.value)
    assert mac.calls == []
    assert list(private_tmp.iterdir()) == []


@pytest.mark.parametrize("folder", ["/tmp/two\nlines", "/tmp/tab\there", "/tmp/escape\x1b[2J"])
def test_control_characters_in_the_folder_are_refused(private_tmp: Path, folder: str) -> None:
    expected = r"^the folder contains a control character .* would type as a key"
    refuses_before_touching_terminal(private_tmp, ValidationError, expected, folder=folder)


def test_control_characters_in_the_typed_program_paths_are_refused(
    private_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "executable", "/opt/py\nthon")
    expected = r"^the Python interpreter path contains a control character"
    refuses_before_touching_terminal(private_tmp, ValidationError, expected)
    monkeypatch.undo()

    def launcher(spec: str) -> list[str]:  # launcher_argv's answer where pao's launcher sits in a folder named with ESC
        return [sys.executable, "-I", "-S", "/opt/pao\x1b/launch.py", spec]

    monkeypatch.setattr("pao_terminalapp.launch.launcher_argv", launcher)
    refuses_before_touching_terminal(private_tmp, ValidationError, r"^the launcher path contains a control character")


@pytest.mark.parametrize("name", ["1ABC", "A-B", "A B", "A=B", ""])
def test_bad_environment_names_are_refused(private_tmp: Path, name: str) -> None:
    refuses_before_touching_terminal(
        private_tmp, ValidationError, r"^environment variable name .* is not valid$", env={name: "x"}
    )


def test_an_empty_command_is_refused(private_tmp: Path) -> None:
    refuses_before_touching_terminal(private_tmp, ValidationError, "^the agent's command is empty$", command=[])


def test_a_launch_file_that_cannot_be_written_is_one_line(private_tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    missing = private_tmp / "missing"
    monkeypatch.setattr("tempfile.tempdir", str(missing))
    expected = rf"^cannot write the agent's launch file in {missing}: No such file or directory$"
    refuses_before_touching_terminal(private_tmp, PaoError, expected, env={"ANTHROPIC_API_KEY": SECRET})
