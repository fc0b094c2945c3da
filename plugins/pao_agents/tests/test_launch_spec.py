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
from pao_core.files import atomic_write
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


READER = ("import json, os, sys, time; started = time.time(); text = open(sys.argv[1], encoding='utf-8').read(); "
          "json.dump({'started': started, 'read': time.time(), 'text': text}, open(sys.argv[2], 'w'))")
"""An agent that reads its briefing file once as it starts, as Claude Code reads --append-system-prompt-file."""


def _piped_launch(tmp_path: Path, wait: float, owner: int) -> tuple[Path, Path, subprocess.Popen]:
    from pao_agents.launch import gate_argv, open_gate, release_gate

    folder = tmp_path / "agent"
    folder.mkdir()
    pipe, out = folder / "briefing.md", folder / "read.json"
    os.mkfifo(pipe, 0o600)
    gate = open_gate()
    window = subprocess.Popen(gate_argv(gate), env=TERMINAL_ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    release_gate(gate, [sys.executable, "-c", READER, str(pipe), str(out)], {"LANG": "C.UTF-8"},
                 {"pipe": str(pipe), "wait": wait, "owner": owner})
    return pipe, out, window


def test_an_agent_started_before_its_briefing_reads_it_whole_once_it_is_written(tmp_path: Path) -> None:
    from pao_agents.launch import READY_SUFFIX

    pipe, out, window = _piped_launch(tmp_path, wait=30, owner=os.getpid())
    import time

    time.sleep(0.5)  # the agent started and waits at its pipe
    assert window.poll() is None and not out.exists()
    briefing = "# Briefing\n" + "memory line\n" * 2000  # ~24 KB: more than one read
    written = time.time()
    atomic_write(Path(f"{pipe}{READY_SUFFIX}"), briefing, mode=0o600)  # as pao writes it

    assert window.wait(timeout=30) == 0, window.stderr.read() if window.stderr else ""
    got = json.loads(out.read_text(encoding="utf-8"))
    assert got["text"] == briefing and got["started"] < written <= got["read"]
    # later readers (a resume) find the briefing as a plain file; nothing is left beside it
    from pao_core.waiting import poll_until

    assert poll_until(lambda: pipe.is_file(), 5), "the pipe was not replaced by the briefing"
    assert pipe.read_text(encoding="utf-8") == briefing and stat.S_IMODE(pipe.stat().st_mode) == 0o600
    assert sorted(p.name for p in pipe.parent.iterdir()) == ["briefing.md", "read.json"]


@pytest.mark.parametrize("owner_gone", [False, True])
def test_a_briefing_that_never_comes_leaves_the_agent_an_empty_one_within_its_bound(tmp_path: Path, owner_gone: bool) -> None:
    import time

    owner = subprocess.Popen([sys.executable, "-c", "pass"]) if owner_gone else None
    if owner is not None:
        owner.wait()
    started = time.monotonic()
    pipe, out, window = _piped_launch(tmp_path, wait=60 if owner_gone else 1.0, owner=owner.pid if owner else os.getpid())

    assert window.wait(timeout=30) == 0
    took = time.monotonic() - started
    assert json.loads(out.read_text(encoding="utf-8"))["text"] == ""
    assert took < (5 if owner_gone else 6), f"the agent waited {took:.1f} s"  # a gone owner: at once, not 60 s
    from pao_core.waiting import poll_until

    assert poll_until(lambda: pipe.is_file(), 5) and pipe.read_text() == ""


def test_a_briefing_composed_past_the_bound_is_said_and_kept_for_a_resume(tmp_path: Path, capsys) -> None:
    from pao_agents.launch import READY_SUFFIX
    from pao_agents.piped_briefing import handed
    from pao_agents.spec.records import SpawnRequest

    pipe, out, window = _piped_launch(tmp_path, wait=0.3, owner=os.getpid())
    assert window.wait(timeout=30) == 0 and json.loads(out.read_text(encoding="utf-8"))["text"] == ""  # went on
    from pao_core.waiting import poll_until

    assert poll_until(lambda: pipe.is_file(), 5)
    atomic_write(Path(f"{pipe}{READY_SUFFIX}"), "# Briefing, late\n", mode=0o600)  # pao composed it only now
    request = SpawnRequest("t", str(tmp_path), "late", "claude-code", agent_dir=str(pipe.parent))

    assert handed(request, 0.3, patience=0.2) is False
    said = f"pao: late started without its briefing (not composed within 0.3 s); it is in {pipe} for a resume\n"
    assert capsys.readouterr().err == said
    assert pipe.read_text(encoding="utf-8") == "# Briefing, late\n"
    assert sorted(p.name for p in pipe.parent.iterdir()) == ["briefing.md", "read.json"]


def test_a_cli_that_has_not_read_its_pipe_yet_is_not_called_late(tmp_path: Path) -> None:
    from pao_agents.launch import READY_SUFFIX
    from pao_agents.piped_briefing import handed
    from pao_agents.spec.records import SpawnRequest

    os.mkfifo(tmp_path / "briefing.md", 0o600)  # no reader yet: a CLI at its own trust dialog
    atomic_write(tmp_path / f"briefing.md{READY_SUFFIX}", "# Briefing\n", mode=0o600)
    request = SpawnRequest("t", str(tmp_path), "asks", "claude-code", agent_dir=str(tmp_path))

    assert handed(request, 10.0, patience=0.0) is None
    assert (tmp_path / "briefing.md").is_fifo()
