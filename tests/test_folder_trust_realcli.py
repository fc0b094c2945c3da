"""Folder trust with the real Claude Code CLI through ``pao spawn``, in a private tmux, against the loopback stub.

A cloned folder whose ``.claude/settings.json`` has a SessionStart hook is refused: the hook
never runs, no window opens, ``~/.claude.json`` gains nothing. Once the user trusts it
(``pao trust``) the agent starts without any dialog, and the CLI, trusting the folder, runs
the folder's hook: the user's grant, not pao's. A folder with inert settings starts without
``pao trust``. ``pao kill --clean`` removes exactly the keys pao added.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from pao_core.cli import main
from pao_core.plugins import reset_plugins
from pao_testing.anthropic_stub import AnthropicStub
from pao_testing.claude_cli import PrivateTmux
from pao_testing.hostrun import until

pytestmark = [pytest.mark.realcli,
              pytest.mark.every_claude_pin("the pins lock and write the trust file differently (claude_trust)")]


def _spawn(capsys: pytest.CaptureFixture[str], folder: Path, *extra: str) -> tuple[int, str, str]:
    reset_plugins()
    try:
        code = main(["spawn", "list the files", "--folder", str(folder), "--json", *extra])
    finally:
        reset_plugins()
    out, err = capsys.readouterr()
    return code, out, err


def _projects(claude_home: Path) -> dict:
    return json.loads((claude_home / ".claude.json").read_text(encoding="utf-8")).get("projects", {})


def test_a_refused_folders_hook_never_runs_and_a_trusted_one_starts_without_the_dialog(
    claude_cli: Path,
    claude_home: Path,
    claude_env: dict[str, str],
    anthropic_stub: AnthropicStub,
    private_tmux: PrivateTmux,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    for key, value in claude_env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("PAO_CLAUDE_COMMAND", str(claude_cli))
    monkeypatch.setenv("PAO_TMUX_SOCKET", private_tmux.socket)
    monkeypatch.setenv("PAO_LOAD_PLUGINS", "pao-agents,pao-tmux,pao-hosts")
    marker = tmp_path / "the-repo-hook-ran"
    cloned = tmp_path / "cloned"
    (cloned / ".claude").mkdir(parents=True)
    hook = {"type": "command", "command": f"touch {marker}"}
    (cloned / ".claude" / "settings.json").write_text(json.dumps({"hooks": {"SessionStart": [{"hooks": [hook]}]}}))
    before = _projects(claude_home)
    running = _processes_of_this_test()  # the suite's own servers, started before

    code, out, err = _spawn(capsys, cloned)
    assert code != 0 and json.loads(out)["code"] == code  # --json: the failure as one object
    [line] = [text for text in err.splitlines() if text.strip()]
    assert ".claude/settings.json: hooks.SessionStart runs 'touch /" in line and f"pao trust {cloned}`" in line
    windows = subprocess.run(["tmux", "-L", private_tmux.socket, "list-windows", "-a"], capture_output=True, check=False)
    assert windows.returncode != 0, "a window was opened"
    # Nothing pao could have started is alive anywhere on the machine (whatever adopted it: a window's tmux server,
    # a process forked away and left to init) and the stub heard nothing: no process exists that could still run the
    # hook, so the marker's absence is final.
    assert not _started_since(running), "a process pao started is still running"
    assert not anthropic_stub.requests, "the CLI started and reached the stub"
    assert not marker.exists() and _projects(claude_home) == before

    reset_plugins()
    assert main(["trust", str(cloned)]) == 0
    code, out, err = _spawn(capsys, cloned)
    assert code == 0, err  # readiness was reached: a trust dialog would have stopped pao with its message
    record = json.loads(out)
    assert record["extra"]["trust"]["added"]["keys"] == ["hasTrustDialogAccepted", "allowedTools"]
    assert until(marker.exists, bool, timeout=30), "the trusted folder's own hook did not run"

    inert = tmp_path / "inert"
    (inert / ".claude").mkdir(parents=True)
    (inert / ".claude" / "settings.json").write_text(json.dumps({"model": "sonnet", "permissions": {"deny": ["Bash"]}}))
    code, out, err = _spawn(capsys, inert, "--name", "inert")
    assert code == 0, err
    assert json.loads(out)["extra"]["trust"]["why"] == "its project settings run nothing"
    assert _projects(claude_home)[str(inert)]["hasTrustDialogAccepted"] is True

    for name in (record["name"], "inert"):
        reset_plugins()
        assert main(["kill", name, "--clean"]) == 0
    after = _projects(claude_home)
    for folder in (cloned, inert):  # the CLI's own keys may stay; pao's are gone
        assert "hasTrustDialogAccepted" not in after.get(str(folder), {}), after.get(str(folder))
        assert after.get(str(folder), {}).get("allowedTools") != []
    assert {key: value for key, value in after.items() if key not in (str(cloned), str(inert))} == before


def _processes_of_this_test() -> set[tuple[int, float]]:
    """Every process on this machine (pid, start time) whose environment holds this test's HOME or PAO_HOME, except
    this interpreter's own (pao's helpers, the briefing's vector helper, run pao's code and cannot run the folder's
    hook). Read from the whole process table, not this process's children: a process that pao started and that
    forked away (a tmux server, a daemon) is adopted by init, and no fixed wait is needed to see it."""
    ours = {os.environ["HOME"], os.environ["PAO_HOME"]}
    found = set()
    for process in psutil.process_iter(["pid", "create_time", "exe", "environ"]):
        environ = process.info["environ"] or {}  # None: not ours to read, or gone
        if {environ.get("HOME"), environ.get("PAO_HOME")} & ours and process.info["exe"] != sys.executable:
            found.add((process.info["pid"], process.info["create_time"]))
    return found


def _started_since(running: set[tuple[int, float]]) -> set[tuple[int, float]]:
    return _processes_of_this_test() - running


def test_the_check_sees_a_process_that_forked_away_from_this_one(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The check above is not blind to a process that left this process's tree before it ran anything."""
    monkeypatch.setenv("PAO_HOME", str(tmp_path))
    running = _processes_of_this_test()
    pid_file = tmp_path / "pid"
    subprocess.run(["sh", "-c", f'sleep 30 </dev/null >/dev/null 2>&1 & echo $! > {pid_file}'], check=True)
    orphan = int(pid_file.read_text())
    try:
        assert orphan not in {child.pid for child in psutil.Process().children(recursive=True)}
        assert orphan in {pid for pid, _ in _started_since(running)}
    finally:
        with contextlib.suppress(psutil.Error):
            psutil.Process(orphan).kill()
