"""Nothing in an agent's folder runs because pao started something there (issue 28, items 1 and 6).

The folder is a hostile clone (``pao_testing.hostile``): Python modules named like the
standard library's and pao's own, programs named like the ones a hook's ``sh`` runs,
and its own ``PYTHONPATH``/``PYTHONSTARTUP``/``BASH_ENV``/``PATH``. Each trap writes a
marker when it runs; each test proves the trap is live (a control) and that pao's
command, run exactly as the CLI runs it, answers while no marker appears.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from pao_agents.spec import event_hook_command, host_agents
from pao_agents import agentdir
from pao_core.plugins import load_config
from pao_agents.spec import SpawnRequest
from pao_core.plugins import get_plugins, reset_plugins
from pao_core.waiting import poll_until
from pao_testing.hostile import fired, hostile_environment, hostile_folder


@pytest.fixture
def hostile(tmp_path: Path) -> tuple[Path, Path]:
    return hostile_folder(tmp_path / "clone", tmp_path / "markers"), tmp_path / "markers"


def _mcp_lines() -> bytes:
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}
    messages = [initialize, {"jsonrpc": "2.0", "method": "notifications/initialized"},
                {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}]
    return b"".join(json.dumps(message).encode() + b"\n" for message in messages)


def test_the_folder_s_modules_would_run_in_a_python_started_there(hostile: tuple[Path, Path]) -> None:
    """The control: the traps are live for a plain ``python -m`` in the folder."""
    folder, markers = hostile
    env = {**os.environ, "PYTHONPATH": str(folder)}
    subprocess.run([sys.executable, "-m", "pao_core", "--version"], cwd=folder, env=env, capture_output=True, timeout=60)
    assert "pao_core___init__.py" in fired(markers)


def test_the_mcp_server_command_of_the_wiring_answers_and_runs_nothing_of_the_folder(
    isolated_home: Path, hostile: tuple[Path, Path]
) -> None:
    folder, markers = hostile
    reset_plugins()  # every installed plugin, as a user has them
    try:
        plugins, config = get_plugins(), load_config()
        host = next(host for host in host_agents(plugins, config) if host.name == "claude-code")
        request = SpawnRequest("fix it", str(folder), "clone", "claude-code", session_id="5f0c2a9e-0000-4000-8000-000000000000")
        wiring = agentdir.session_mcp(request, host, config, plugins, os.environ)
    finally:
        reset_plugins()
    config_file = Path(wiring.args[wiring.args.index("--mcp-config") + 1])
    server = json.loads(config_file.read_text())["mcpServers"]["pao"]
    assert server["args"][0] == "-I"
    env = {**os.environ, **hostile_environment(folder), **server["env"]}
    listed = _tools_of([server["command"], *server["args"]], cwd=folder, env=env)
    assert listed == {"search_memory", "remember", "memory_status"}
    assert fired(markers) == []


def _tools_of(command: list[str], **options: object) -> set[str] | str:
    """The tools an MCP server lists (stdin stays open until it answers, as a CLI keeps it); else its stderr."""
    with subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          **options) as server:  # type: ignore[call-overload]
        assert server.stdin and server.stdout
        watchdog = threading.Timer(60, server.kill)  # never a hang
        watchdog.start()
        server.stdin.write(_mcp_lines())
        server.stdin.flush()
        for line in server.stdout:
            answer = json.loads(line)
            if answer.get("id") == 2:
                server.stdin.close()
                server.wait(30)
                watchdog.cancel()
                return {tool["name"] for tool in answer["result"]["tools"]}
        server.stdin.close()
        watchdog.cancel()
        return server.stderr.read().decode()[-2000:] if server.stderr else ""


def test_the_server_leaves_the_folder_before_it_serves(hostile: tuple[Path, Path]) -> None:
    """``python -I -m pao_mcp``: its first step is ``chdir("/")``, before the server (``pao_mcp.start``) runs."""
    folder, _ = hostile
    probe = ("import os, runpy, sys; import pao_mcp.start as start; start.main = lambda argv: print(os.getcwd(), argv) or 0; "
             "sys.argv = ['pao_mcp', '--agent', 'x']; runpy.run_module('pao_mcp', run_name='__main__')")
    done = subprocess.run([sys.executable, "-I", "-c", probe], cwd=folder, capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "/ ['--agent', 'x']", done.stderr


@pytest.mark.parametrize("shell", ["sh", "dash", "bash"])
def test_a_hook_command_run_in_the_folder_runs_nothing_of_it(tmp_path: Path, hostile: tuple[Path, Path],
                                                            shell: str, isolated_home: Path) -> None:
    """Claude Code runs a hook with ``/bin/sh -c`` (node's ``shell: true``) in the agent's folder, and the hook of
    a state-changing event starts pao's recorder (Python) in the background: neither runs anything of the folder. ``bash -c``
    would read ``BASH_ENV`` before any command, so that one case runs without it: the CLI's environment is the
    user's (pao's launch spec) or its project settings' ``env``, which only a trusted folder gets."""
    folder, markers = hostile
    log = tmp_path / "pao" / "agents" / "agent" / agentdir.EVENTS
    log.parent.mkdir(parents=True)
    env = {**os.environ, **hostile_environment(folder)}
    control = subprocess.run(["/bin/sh", "-c", "tr -d x </dev/null; date"], cwd=folder, env=env, capture_output=True)
    assert {"tr", "date"} <= set(fired(markers)), control  # the control: the folder's programs are found first
    for name in fired(markers):
        (markers / name).unlink()
    event = {"session_id": "s", "hook_event_name": "Stop"}
    binary = subprocess.run(["/bin/sh", "-c", f"command -v {shell}"], capture_output=True, text=True).stdout.strip()
    if not binary:
        pytest.skip(f"{shell} is not installed")
    if shell == "bash":
        del env["BASH_ENV"]
    done = subprocess.run([binary, "-c", event_hook_command(log, "Stop")], cwd=folder, env=env,
                          input=json.dumps(event).encode(), capture_output=True, timeout=30)
    assert done.returncode == 0, done.stderr
    assert [e["name"] for e in agentdir.read_events(log)] == ["Stop"]
    recorder_said = log.parent / "notify.log"  # pao's recorder, started in the background, knows no such agent
    poll_until(lambda: recorder_said.exists() and recorder_said.read_text(), 20)
    assert "no agent named 'agent'" in recorder_said.read_text()
    assert fired(markers) == []


# -- pao's own git calls ----------------------------------------------------------------------------------------


def _trapped_repository(tmp_path: Path, markers: Path) -> Path:
    """A repository whose hooks, file-system monitor, filters and included config each write a marker."""
    repo = tmp_path / "repo"
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(repo)]
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    (repo / "README.md").write_text("a project\n")
    (repo / ".gitattributes").write_text("*.md filter=evil\n")
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "init"], check=True)
    markers.mkdir(exist_ok=True)

    def trap(name: str) -> str:
        script = tmp_path / f"trap-{name}"
        script.write_text(f"#!/bin/sh\n: > '{markers / name}'\ncat\n")
        script.chmod(0o755)
        return str(script)

    for hook in ("post-checkout", "reference-transaction", "post-index-change", "pre-commit"):
        Path(trap(hook)).rename(repo / ".git" / "hooks" / hook)
    included = tmp_path / "included.config"
    included.write_text(f"[filter \"sneaky\"]\n\tsmudge = {trap('included-smudge')}\n")
    with (repo / ".git" / "config").open("a") as config:
        config.write(f"[core]\n\tfsmonitor = {trap('fsmonitor')}\n[filter \"evil\"]\n\tsmudge = {trap('smudge')}\n"
                     f"\tclean = {trap('clean')}\n\trequired = true\n[include]\n\tpath = {included}\n")
    (repo / ".gitattributes").write_text("*.md filter=evil\n*.txt filter=sneaky\n")
    return repo


def test_pao_s_git_runs_no_hook_monitor_or_filter_of_the_repository(isolated_home: Path, tmp_path: Path) -> None:
    from pao_agents.delivery import git_exclude_path
    from pao_agents.worktrees import add_worktree, remove_worktree, uncommitted

    markers = tmp_path / "markers"
    repo = _trapped_repository(tmp_path, markers)
    subprocess.run(["git", "-C", str(repo), "status", "--porcelain"], capture_output=True, check=True)
    assert "fsmonitor" in fired(markers)  # the control: plain git runs the repository's programs
    for name in fired(markers):
        (markers / name).unlink()

    assert git_exclude_path(repo) == repo / ".git" / "info" / "exclude"
    made = add_worktree(str(repo), os.environ["PAO_HOME"], "tidy")
    assert Path(made["path"], "README.md").read_text() == "a project\n" and made["branch"] == "pao/tidy"
    assert uncommitted(made) == []
    remove_worktree(made)
    assert not Path(made["root"]).exists()
    assert fired(markers) == []


# -- the event log ----------------------------------------------------------------------------------------------


def _append(log: Path, event: dict) -> None:
    """One event appended by pao's own hook command, as the CLI runs it."""
    subprocess.run(["/bin/sh", "-c", agentdir.append_command(log)], input=json.dumps(event).encode(), check=True,
                   timeout=30)


def test_a_hook_event_of_a_megabyte_is_appended_as_its_name(tmp_path: Path) -> None:
    log = tmp_path / agentdir.EVENTS
    _append(log, {"session_id": "s", "hook_event_name": "SessionStart"})
    _append(log, {"session_id": "s", "hook_event_name": "UserPromptSubmit", "prompt": "p" * 1_000_000})
    _append(log, {"session_id": "s", "hook_event_name": "Stop"})
    lines = log.read_text().splitlines()
    assert max(map(len, lines)) < agentdir.EVENT_LIMIT
    assert json.loads(lines[1])["event"] == {"hook_event_name": "UserPromptSubmit", "truncated": True}
    events = agentdir.read_events(log)
    assert [event["name"] for event in events] == ["SessionStart", "UserPromptSubmit", "Stop"]
    assert agentdir.newest_state(events) == "ready"


def test_a_megabyte_line_in_the_log_never_blanks_the_events_around_it(tmp_path: Path) -> None:
    """A log an older pao (or anything else) wrote: a 1 MB line between normal events, then one at the end."""
    log = tmp_path / agentdir.EVENTS

    def line(name: str, at: int, prompt: str = "") -> str:
        return json.dumps({"event": {"session_id": "s", "hook_event_name": name, "prompt": prompt}, "at": at}) + "\n"

    log.write_text(line("SessionStart", 1) + line("UserPromptSubmit", 2, "x" * 1_000_000) + line("Stop", 3))
    assert [(event["name"], event["at"]) for event in agentdir.read_events(log)] == [
        ("SessionStart", 1.0), ("UserPromptSubmit", 2.0), ("Stop", 3.0)]
    assert agentdir.session_receipt(agentdir.read_events(log), "s") == 1.0
    with log.open("a") as handle:
        handle.write(line("UserPromptSubmit", 4, "y" * 1_000_000))
    events = agentdir.read_events(log)
    assert [event["name"] for event in events] == ["SessionStart", "UserPromptSubmit", "Stop", "UserPromptSubmit"]
    assert agentdir.newest_state(events) == "busy" and events[-1]["event"] == {"truncated": True}


# -- disableAllHooks --------------------------------------------------------------------------------------------


def test_a_folder_that_turns_hooks_off_is_found_and_a_fifo_there_never_hangs(tmp_path: Path) -> None:
    from pao_hosts.claude_code import ClaudeCode

    host = ClaudeCode(home=tmp_path / "home")
    folder = tmp_path / "repo"
    (folder / ".claude").mkdir(parents=True)
    assert host.events_silenced(str(folder)) is None
    os.mkfifo(folder / ".claude" / "settings.local.json")  # reading it would wait for a writer for ever
    (folder / ".claude" / "settings.json").write_text('{"disableAllHooks": true}')
    assert host.events_silenced(str(folder)) == f"{folder}/.claude/settings.json sets disableAllHooks"
    (folder / ".claude" / "settings.json").write_text('{"disableAllHooks": "yes", "hooks": {}}')
    assert host.events_silenced(str(folder)) is None
