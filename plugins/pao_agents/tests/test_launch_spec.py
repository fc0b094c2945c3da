"""pao's one launcher of agents (``plugins/pao_agents/pao_agents/launch.py``), run for real as ``python -I -S``."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from pao_core.errors import PaoError, ValidationError
from pao_agents.launch import launcher_argv, write_spec

RECORDER = "import json, os, sys; json.dump(dict(os.environ), open(sys.argv[1], 'w', encoding='utf-8'))"
TERMINAL_ENV = {"TERM": "tab-term", "TERM_PROGRAM": "Apple_Terminal", "CI": "true", "SHELL_ONLY": "1"}
"""The environment of the shell or pane the launcher runs in."""

pytestmark = pytest.mark.usefixtures("private_tmp")


def launch(spec_path: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        launcher_argv(spec_path), env=TERMINAL_ENV, capture_output=True, text=True, timeout=30, check=False
    )


def test_the_agent_gets_exactly_the_spec_environment_and_the_terminals_identity(tmp_path: Path) -> None:
    out = tmp_path / "env.json"
    env = {
        "ANTHROPIC_API_KEY": "sk-ant-secret $HOME `id`",
        "MULTI": "two\nlines",
        "TERM": "spawner-term",
        "TERM_PROGRAM": "iTerm.app",
        "COLORTERM": "truecolor",
        "LANG": "C.UTF-8",
    }
    spec = write_spec([sys.executable, "-c", RECORDER, str(out)], env)
    assert stat.S_IMODE(os.stat(spec).st_mode) == 0o600

    done = launch(spec)

    assert (done.returncode, done.stderr) == (0, "")
    expected = {**env, "TERM": "tab-term", "TERM_PROGRAM": "Apple_Terminal"}  # no CI, no SHELL_ONLY
    assert json.loads(out.read_text(encoding="utf-8")) == expected
    assert not os.path.exists(spec)


def test_a_missing_program_is_one_line_and_exit_127(private_tmp: Path) -> None:
    spec = write_spec(["no-such-program-pao", "--flag"], {"PATH": "/usr/bin:/bin"})

    done = launch(spec)

    assert done.returncode == 127
    assert done.stderr == "pao: cannot start no-such-program-pao: No such file or directory\n"
    assert list(private_tmp.iterdir()) == []


@pytest.mark.parametrize("content", ["not json", '{"argv": [], "env": {}}', '{"argv": ["x"], "env": {"A": 1}}', "[]"])
def test_a_broken_spec_is_one_line_and_deleted(private_tmp: Path, content: str) -> None:
    spec = private_tmp / "pao-launch-broken.json"
    spec.write_text(content, encoding="utf-8")

    done = launch(str(spec))

    assert done.returncode == 127
    assert done.stderr.startswith(f"pao: {spec} is not a launch file: ") and done.stderr.count("\n") == 1
    assert not spec.exists()


def test_a_missing_spec_is_one_line(private_tmp: Path) -> None:
    done = launch(str(private_tmp / "gone.json"))
    assert done.returncode == 127
    assert done.stderr == f"pao: cannot read the launch file {private_tmp / 'gone.json'}: No such file or directory\n"


@pytest.mark.parametrize(
    ("command", "env", "message"),
    [
        ([], {}, "^the agent's command is empty$"),
        (["claude"], {"A-B": "x"}, r"^environment variable name 'A-B' is not valid$"),
        (["claude"], {"": "x"}, r"^environment variable name '' is not valid$"),
        (["claude"], {"A": "nul\0byte"}, r"^a NUL byte cannot be passed to a program: "),
        (["clau\0de"], {}, r"^a NUL byte cannot be passed to a program: "),
    ],
)
def test_bad_specs_are_refused_before_anything_is_written(
    private_tmp: Path, command: list[str], env: dict[str, str], message: str
) -> None:
    with pytest.raises(ValidationError, match=message):
        write_spec(command, env)
    assert list(private_tmp.iterdir()) == []


def test_a_spec_that_cannot_be_written_is_one_line(private_tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    missing = private_tmp / "missing"
    monkeypatch.setattr("tempfile.tempdir", str(missing))
    with pytest.raises(PaoError) as caught:
        write_spec(["claude"], {"ANTHROPIC_API_KEY": "sk-ant-secret"})
    assert str(caught.value) == f"cannot write the agent's launch file in {missing}: No such file or directory"


def test_a_gated_launcher_waits_for_its_spec_then_starts_the_agent(tmp_path: Path, private_tmp: Path) -> None:
    from pao_agents.launch import gate_argv, open_gate, release_gate

    out = tmp_path / "env.json"
    gate = open_gate()
    assert stat.S_IMODE(os.stat(os.path.dirname(gate)).st_mode) == 0o700
    waiting = subprocess.Popen(gate_argv(gate), env=TERMINAL_ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    with pytest.raises(subprocess.TimeoutExpired):
        waiting.wait(timeout=0.3)  # nothing to start yet
    assert not out.exists()

    env = {"SECRET": "s3cret", "TERM": "spawner-term", "LANG": "C.UTF-8"}
    release_gate(gate, [sys.executable, "-c", RECORDER, str(out)], env)

    assert waiting.wait(timeout=30) == 0, waiting.stderr.read() if waiting.stderr else ""
    expected = {**env, "TERM": "tab-term", "TERM_PROGRAM": "Apple_Terminal"}  # the terminal's identity, no CI
    assert json.loads(out.read_text(encoding="utf-8")) == expected
    assert list(private_tmp.iterdir()) == [], "the gate's folder or spec was left behind"


def test_a_gate_closed_without_an_agent_leaves_nothing(private_tmp: Path) -> None:
    from pao_agents.launch import close_gate, open_gate

    close_gate(open_gate())

    assert list(private_tmp.iterdir()) == []
