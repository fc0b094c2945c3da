"""Notifications without a monitor: the hook command a CLI runs records the state and notifies through
``[notify] command`` and ``[notify] webhook``; repeats collapse; text from the agent is cleaned; doctor checks.

The hook commands are the ones Claude Code gets in its per-session settings, run with ``/bin/sh -c`` as the
CLI runs them, fed the JSON the CLI feeds them; the webhook is a real HTTP server on 127.0.0.1 and the command
a real executable that records its argv.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from pao_agents import agentdir
from pao_agents.agentdir import STATE_FILE
from pao_agents.notify import notice, untrusted_words
from pao_agents.notify_channels import ChannelFailed, command_argv, notifier_checks, post_webhook
from pao_agents.resolve import AgentContext
from pao_agents.spec import AgentRecord, NotifyOptions, SpawnRequest
from pao_core.plugins import load_config
from pao_core.plugins import build_plugins
from pao_core.waiting import poll_until
from pao_hosts.claude_code import SETTINGS, ClaudeCode, ClaudeCodeOptions
from pao_testing.claude_cli import cli_path, pinned_versions
from pao_testing.webhook_stub import WebhookReceiver, argv_recorder, recorded_argv


def newest_pinned_claude() -> ClaudeCode:
    """Claude Code's profile for the newest pinned version: its hook commands depend on the version."""
    newest = max(pinned_versions(), key=lambda version: tuple(int(part) for part in version.split(".")))
    return ClaudeCode(options=ClaudeCodeOptions(command=str(cli_path(newest))))

SECRET = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"


def _wait(probe: Any, timeout: float = 15.0) -> Any:
    return poll_until(probe, timeout, cap=0.02)


def _hooked_agent(state: str = "busy") -> tuple[AgentContext, Path, dict[str, str]]:
    """An agent with a private folder and Claude Code's hook commands for it, recorded in ``state``."""
    agents = AgentContext.open(load_config(), build_plugins())
    folder = agentdir.fresh_agent_dir(agents.config.home, "api")
    agents.registry.add(AgentRecord("api", "/src/api", "fix the login bug", "claude-code", "tmux", "pao:%1",
                                    extra={"agent_dir": str(folder), "events": "hooks (--settings)"}))
    agents.set_state("api", state, source="spawn")
    request = SpawnRequest("fix the login bug", "/src/api", "api", "claude-code", agent_dir=str(folder))
    settings = json.loads(newest_pinned_claude().session_files(request)[SETTINGS])
    commands = {event: entry[0]["hooks"][0]["command"] for event, entry in settings["hooks"].items()}
    return agents, folder, commands


def _fire(command: str, event: dict[str, Any]) -> float:
    """Run one hook command as the CLI does; how long the CLI waited for it."""
    started = time.monotonic()
    done = subprocess.run(["/bin/sh", "-c", command], input=json.dumps(event), capture_output=True, text=True,
                          cwd="/", timeout=30)
    assert done.returncode == 0 and not done.stdout, done.stderr
    return time.monotonic() - started


def test_a_hook_event_reaches_a_loopback_webhook_and_a_command(isolated_home: Path, pao_config_file: Path,
                                                                 tmp_path: Path) -> None:
    script, argv_log = argv_recorder(tmp_path)
    with WebhookReceiver() as receiver:
        pao_config_file.write_text(f'[notify]\ncommand = ["{script}", "{{name}}", "--state={{state}}", "{{reason}}"]\n'
                                   f'webhook = "{receiver.url}/services/T0/B0/SECRETPATH"\n')
        agents, folder, commands = _hooked_agent("busy")
        waited = _fire(commands["Stop"], {"session_id": "s", "hook_event_name": "Stop"})
        assert waited < 1.0  # the recorder runs in the background: the CLI does not wait for it
        posted = receiver.wait_for(lambda request: request.method == "POST", timeout=15)
        assert posted is not None and posted.route == "/services/T0/B0/SECRETPATH"
        assert posted.body["text"].startswith("pao: api has finished its turn\nfix the login bug (/src/api)")
        assert _wait(lambda: recorded_argv(argv_log)) == [["api", "--state=finished", ""]]
        assert agents.registry.get("api").state == "ready"
        assert (folder / STATE_FILE).read_text() == "ready\n"

        hostile = f"Claude needs your permission to use Bash\x1b]0;owned\x07 with token={SECRET}; $(reboot) {'x' * 500}"
        _fire(commands["Notification"], {"hook_event_name": "Notification", "message": hostile})
        runs = _wait(lambda: recorded_argv(argv_log)[1:])
        name, state, reason = runs[0]
        assert (name, state) == ("api", "--state=waiting")
        assert reason.startswith("Claude needs your permission to use Bash with token=[redacted]; $(reboot) x")
        assert SECRET not in reason and "\x1b" not in reason and "\x07" not in reason and len(reason) <= 200
        waiting = receiver.wait_for(lambda request: "is waiting" in json.dumps(request.body), timeout=15)
        assert waiting is not None and SECRET not in json.dumps(waiting.body)
    assert agents.registry.get("api").state == "waiting"
    assert not (folder / "notify.log").read_text()  # nothing failed


def test_the_reason_notified_says_what_is_asked_or_what_failed(isolated_home: Path, pao_config_file: Path,
                                                               tmp_path: Path) -> None:
    """A permission request names its tool and command, Gemini's ToolPermission what it confirms (not its own
    "Tool Shell requires execution"), an API error its text (not Claude Code's ``error: "unknown"``)."""
    script, argv_log = argv_recorder(tmp_path)
    pao_config_file.write_text(f'[notify]\ncommand = ["{script}", "{{state}}", "{{reason}}"]\ncollapse = 0\n')
    agents, _, commands = _hooked_agent("busy")
    fired = [("PermissionRequest", {"tool_name": "Bash", "tool_input": {"command": "rm -rf build"}}),
             ("UserPromptSubmit", {"prompt": "go on"}),
             ("Notification", {"notification_type": "ToolPermission", "message": "Tool Shell requires execution",
                               "details": {"type": "exec", "title": "Confirm Shell Command", "command": "touch notes.txt"}}),
             ("StopFailure", {"error": "unknown", "last_assistant_message": "API Error: 400 invalid request"})]
    for event, payload in fired:  # each recorded before the next: a change of state notifies, no change does not
        _fire(commands[event], {"session_id": "s", "hook_event_name": event, **payload})
        state = "busy" if event == "UserPromptSubmit" else "failed" if event == "StopFailure" else "waiting"
        _wait(lambda: agents.registry.get("api").state == state or None)
    _wait(lambda: len(recorded_argv(argv_log)) == 3 or None)
    assert recorded_argv(argv_log) == [
        ["waiting", 'asks permission to use "Bash": "rm -rf build"'],
        ["waiting", 'asks permission to use "Shell": "touch notes.txt"'],
        ["failed", 'API error "unknown": "API Error: 400 invalid request"']]


def test_a_notice_is_about_the_event_that_changed_the_state_not_one_appended_since(tmp_path: Path) -> None:
    """The recorder runs in the background: by the time it notifies, the CLI may have gone on (a prompt, an error)."""
    lines = [{"hook_event_name": "PermissionRequest", "tool_name": "Bash", "tool_input": {"command": "make deploy"}},
             {"hook_event_name": "UserPromptSubmit", "prompt": "go on"},
             {"hook_event_name": "SessionEnd", "reason": "prompt_input_exit"}]
    (tmp_path / "events.jsonl").write_text("".join(json.dumps({"event": line, "at": 1}) + "\n" for line in lines))
    record = AgentRecord("api", "/src/api", "t", "claude-code", "tmux", "pao:%1",
                         extra={"agent_dir": str(tmp_path), "events": "hooks (--settings)"})
    assert notice(record, "waiting")["reason"] == 'asks permission to use "Bash": "make deploy"'
    assert notice(record, "dead")["reason"] == "prompt_input_exit"
    assert notice(record, "failed")["reason"] == ""  # no event of the log says failed: nothing to quote


def test_the_recorders_notify_log_is_capped(isolated_home: Path, pao_config_file: Path, tmp_path: Path) -> None:
    """A failure repeated all day (here: the agent is gone from the registry) leaves the log at its newest lines."""
    from pao_agents.notifylog import KEEP, LIMIT

    agents, folder, commands = _hooked_agent("busy")
    agents.registry.remove("api")
    log = folder / "notify.log"
    log.write_bytes(b"".join(b"pao: old failure %06d\n" % n for n in range(LIMIT // 10)))  # past the cap
    log.chmod(0o644)
    _fire(commands["Stop"], {"session_id": "s", "hook_event_name": "Stop"})
    lines = _wait(lambda: log.read_text().splitlines() if "api" in log.read_text() else None)
    assert lines[0].startswith("pao: old failure ") and lines[-2] == "pao: old failure %06d" % (LIMIT // 10 - 1)
    assert lines[-1].startswith("pao: api: ") and log.stat().st_size <= KEEP + 200  # this run's line, kept
    assert stat.S_IMODE(log.stat().st_mode) == 0o600

    elsewhere = tmp_path / "elsewhere.log"  # a link is never trimmed (nor replaced)
    elsewhere.write_bytes(b"first line\n" + b"x" * LIMIT * 2 + b"\n")
    log.unlink()
    log.symlink_to(elsewhere)
    _fire(commands["Stop"], {"session_id": "s", "hook_event_name": "Stop"})
    assert _wait(lambda: b"pao: api: " in elsewhere.read_bytes())
    assert log.is_symlink() and elsewhere.read_bytes().startswith(b"first line\n")


def test_the_event_log_is_capped_to_its_newest_lines_and_the_state_still_follows(isolated_home: Path,
                                                                                 pao_config_file: Path,
                                                                                 tmp_path: Path) -> None:
    """A day of events: the recorder trims ``events.jsonl`` to its newest whole lines (more than any reader reads),
    0600, and records the newest event's state; a log that is a link is never trimmed."""
    agents, folder, commands = _hooked_agent("busy")
    log = folder / agentdir.EVENTS
    line = json.dumps({"event": {"hook_event_name": "PostToolUse", "session_id": "s", "tool_name": "Bash"}, "at": 1.0})
    log.write_text((line + "\n") * (agentdir.EVENTS_LIMIT // len(line) + 1))
    log.chmod(0o644)
    _fire(commands["Stop"], {"session_id": "s", "hook_event_name": "Stop"})
    _wait(lambda: agents.registry.get("api").state == "ready")
    kept = log.read_text().splitlines()
    assert agentdir.TAIL_BYTES < log.stat().st_size <= agentdir.EVENTS_KEEP + 200
    assert kept[0] == line and json.loads(kept[-1])["event"]["hook_event_name"] == "Stop"
    assert stat.S_IMODE(log.stat().st_mode) == 0o600

    elsewhere = tmp_path / "elsewhere.jsonl"
    elsewhere.write_text("first line\n" + (line + "\n") * (agentdir.EVENTS_LIMIT // len(line) + 1))
    log.unlink()
    log.symlink_to(elsewhere)
    agents.set_state("api", "busy", source="spawn")
    _fire(commands["Stop"], {"session_id": "s", "hook_event_name": "Stop"})
    _wait(lambda: agents.registry.get("api").state == "ready")
    assert log.is_symlink() and elsewhere.read_text().startswith("first line\n")


def test_appends_to_an_agent_s_logs_wait_for_a_trim_holding_their_lock(isolated_home: Path, pao_config_file: Path) -> None:
    """A hook's append (``sh``) and a recorder's error line both take the folder's log lock, which a trim holds: a
    line written while a trim reads the log lands in the file that replaces it."""
    import threading

    from pao_agents.notifylog import LOCK_FILE, append_line
    from pao_core.files import state_lock

    _, folder, commands = _hooked_agent("busy")
    log, errors = folder / agentdir.EVENTS, folder / "notify.log"
    with state_lock(folder / LOCK_FILE):  # as a trim holds it
        hook = subprocess.Popen(["/bin/sh", "-c", agentdir.append_command(log)], stdin=subprocess.PIPE, cwd="/")
        hook.stdin.write(json.dumps({"hook_event_name": "UserPromptSubmit", "prompt": "go"}).encode())
        hook.stdin.close()
        writer = threading.Thread(target=append_line, args=(errors, "pao: api: late"))
        writer.start()
        time.sleep(0.5)
        assert log.read_text() == "" and not errors.exists()  # both wait
    writer.join(10)
    assert hook.wait(10) == 0
    assert '"UserPromptSubmit"' in log.read_text() and errors.read_text() == "pao: api: late\n"


def test_no_event_is_lost_to_trims_racing_appends(isolated_home: Path, pao_config_file: Path) -> None:
    from pao_agents.notifylog import trim_log

    _, folder, _ = _hooked_agent("busy")
    log = folder / agentdir.EVENTS
    log.write_text(json.dumps({"event": {"hook_event_name": "Old"}, "at": 1.0}) + "\n")
    command = agentdir.append_command(log)
    hooks = [subprocess.Popen(["/bin/sh", "-c", command], stdin=subprocess.PIPE, cwd="/") for _ in range(40)]
    for number, hook in enumerate(hooks):
        hook.stdin.write(json.dumps({"hook_event_name": "PreToolUse", "n": number}).encode())
        hook.stdin.close()
        trim_log(log, limit=10, keep=64 * 1024)  # a trim at every append: the worst case
    for hook in hooks:
        assert hook.wait(30) == 0
    numbers = sorted(event["event"]["n"] for event in agentdir.read_events(log) if "n" in event["event"])
    assert numbers == list(range(40))


def test_busy_events_start_pao_once_per_turn(isolated_home: Path, pao_config_file: Path, tmp_path: Path) -> None:
    """A tool's event starts the recorder only while the agent's state file does not say busy already."""
    agents, folder, commands = _hooked_agent("ready")
    (folder / STATE_FILE).write_text("busy\n")  # as if the turn's first event had been recorded
    _fire(commands["PostToolUse"], {"hook_event_name": "PostToolUse", "tool_name": "Bash"})
    time.sleep(1.5)  # long enough for a recorder, had one started, to record (it takes ~0.3 s)
    assert agents.registry.get("api").state == "ready"
    (folder / STATE_FILE).write_text("ready\n")
    _fire(commands["PostToolUse"], {"hook_event_name": "PostToolUse", "tool_name": "Bash"})
    assert _wait(lambda: agents.registry.get("api").state == "busy")
    assert (folder / STATE_FILE).read_text() == "busy\n"


def test_a_spawn_under_way_starts_no_interpreter_for_its_first_prompt(isolated_home: Path, pao_config_file: Path,
                                                                        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Until the spawn registers the agent its state file says ``starting`` (a record only the spawn changes): the
    prompt's event then starts no recorder beside the CLI as it sends its first request; a ready agent's does."""
    started = tmp_path / "started"
    interpreter = tmp_path / "python"
    interpreter.write_text(f"#!/bin/sh\necho \"$*\" >> {started}\n")
    interpreter.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(interpreter))  # the recorder's command names this one
    _, folder, commands = _hooked_agent("ready")
    assert (agentdir.fresh_agent_dir(tmp_path, "fresh") / STATE_FILE).read_text() == "starting\n"
    prompt = {"hook_event_name": "UserPromptSubmit", "prompt": "Your task: fix the login bug."}
    for state in ("starting", "paused", "busy"):
        (folder / STATE_FILE).write_text(f"{state}\n")
        _fire(commands["UserPromptSubmit"], prompt)
    (folder / STATE_FILE).write_text("ready\n")
    _fire(commands["UserPromptSubmit"], prompt)
    assert _wait(started.exists)
    time.sleep(0.3)  # a recorder started by the earlier events would have written by now too
    assert started.read_text().splitlines() == [f"-I -m pao_agents.eventhook {folder}"]


def test_repeated_notifications_collapse(isolated_home: Path, pao_config_file: Path, tmp_path: Path) -> None:
    script, argv_log = argv_recorder(tmp_path)
    pao_config_file.write_text(f'[notify]\ncommand = ["{script}", "{{name}}", "{{state}}"]\ncollapse = 60\n')
    agents = AgentContext.open(load_config(), build_plugins())
    agents.registry.add(AgentRecord("api", "/src/api", "t", "claude-code", "tmux", "pao:%1"))
    agents.registry.add(AgentRecord("web", "/src/web", "t", "claude-code", "tmux", "pao:%2"))
    for state in ("busy", "ready", "busy", "ready", "waiting", "busy", "waiting"):
        agents.set_state("api", state, source="hooks")
    agents.set_state("web", "busy", source="hooks")
    agents.set_state("web", "ready", source="hooks")
    assert recorded_argv(argv_log) == [["api", "finished"], ["api", "waiting"], ["web", "finished"]]


def test_only_the_configured_states_notify(isolated_home: Path, pao_config_file: Path, tmp_path: Path) -> None:
    script, argv_log = argv_recorder(tmp_path)
    pao_config_file.write_text(f'[notify]\ncommand = ["{script}", "{{state}}"]\nstates = ["dead"]\ncollapse = 0\n')
    agents = AgentContext.open(load_config(), build_plugins())
    agents.registry.add(AgentRecord("api", "/src/api", "t", "claude-code", "tmux", "pao:%1"))
    for state in ("busy", "ready", "waiting", "dead"):
        agents.set_state("api", state, source="screen")
    assert recorded_argv(argv_log) == [["dead"]]
    assert NotifyOptions().states == ("finished", "waiting", "failed", "dead")


def test_command_words_stay_whole_and_are_replaced_once() -> None:
    values = {"name": "api", "state": "waiting", "reason": "a b; $(rm -rf ~) {state}", "topic": "t", "folder": "/f"}
    argv = command_argv(["notify", "--title={name} {state}", "{reason}", "{folder}x"], values)
    assert argv == ["notify", "--title=api waiting", "a b; $(rm -rf ~) {state}", "/fx"]


def test_text_from_the_agent_is_bounded_and_cleaned() -> None:
    record = AgentRecord("api", "/src/\x1b[2Japi", "fix\nthe\tbug " + "y" * 5000 + f" password={SECRET}",
                         "claude-code", "tmux", "", extra={"waiting_for": "trust\u202e dialog"})
    words = notice(record, "waiting")
    assert words["folder"] == "/src/api" and words["reason"] == "trust dialog"
    assert len(words["topic"]) <= 200 and words["topic"].startswith("fix the bug y")
    assert untrusted_words(f"key {SECRET}") == "key [redacted]"
    assert all("\n" not in value and "\x1b" not in value for value in words.values() if value != words["title"])


def test_a_webhook_failure_never_shows_its_url(isolated_home: Path) -> None:
    words = {"title": "t", "body": "b", "state": "waiting"}
    with WebhookReceiver() as receiver:
        closed = receiver.url
    with pytest.raises(ChannelFailed) as refused:
        post_webhook(f"{closed}/hooks/SECRETPATH", "slack", words, timeout=2)
    assert "SECRETPATH" not in str(refused.value) and str(refused.value).startswith("webhook http://127.0.0.1:")
    with pytest.raises(ChannelFailed, match="plain http") as plain:
        post_webhook("http://example.com/SECRETPATH", "slack", words, timeout=2)
    assert "SECRETPATH" not in str(plain.value)


def test_ntfy_style_posts_json_to_the_server_root(isolated_home: Path) -> None:
    with WebhookReceiver() as receiver:
        assert post_webhook(f"{receiver.url}/my-topic", "ntfy", {"title": "pao: api has exited", "body": "t (/f)",
                                                                 "state": "dead"}, timeout=5) == 200
        posted = receiver.requests[0]
    assert posted.route == "/" and posted.header("content-type") == "application/json"
    assert posted.body == {"topic": "my-topic", "title": "pao: api has exited", "message": "t (/f)",
                           "tags": ["pao", "dead"]}


def test_doctor_checks_the_notifier(isolated_home: Path, pao_config_file: Path, tmp_path: Path,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from pao_agents.checks import pao_doctor_checks

    monkeypatch.setenv("PATH", str(tmp_path))
    pao_config_file.write_text('[notify]\ndesktop = true\ncommand = ["no-such-notifier", "{name}"]\n'
                               'webhook = "http://example.com/services/SECRETPATH"\n')
    config = load_config()
    found = {check.name: check for check in pao_doctor_checks(config, build_plugins()) if check.area == "notify"}
    assert found["desktop"].status == "fail" and "notify-send not found" in found["desktop"].line
    assert found["command"].status == "fail" and "no-such-notifier" in found["command"].line
    assert found["webhook"].status == "fail" and "SECRETPATH" not in found["webhook"].line + found["webhook"].fix
    assert "SECRETPATH" not in json.dumps(config.masked())

    script, _ = argv_recorder(tmp_path)
    (tmp_path / "notify-send").write_text("#!/bin/sh\n")
    (tmp_path / "notify-send").chmod(0o755)
    good = NotifyOptions(desktop=True, command=(script.name,), webhook="https://ntfy.sh/SECRET-topic")
    assert [(c.name, c.status) for c in notifier_checks(good, "linux")] == [("desktop", "ok"), ("command", "ok"),
                                                                             ("webhook", "ok")]
    assert "SECRET" not in " ".join(c.line for c in notifier_checks(good, "linux"))
    loopback = notifier_checks(NotifyOptions(webhook="http://127.0.0.1:9/x"), "linux")
    assert loopback[0].status == "ok" and notifier_checks(NotifyOptions(), "linux")[0].status == "ok"


def test_a_webhook_that_trickles_its_answer_costs_the_timeout_and_no_more(isolated_home: Path) -> None:
    """A server that accepts and sends a byte every 0.2 s never trips a socket's own timeout; the notice is bounded
    by ``[notify] timeout`` as a whole, and the failure does not show the URL."""
    import socket
    import threading

    from pao_agents.notify import deliver

    server = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def trickle() -> None:
        connection, _ = server.accept()
        with connection:
            connection.sendall(b"HTTP/1.1 200 OK\r\n")
            while not stop.wait(0.2):
                connection.sendall(b"X-Slow: 1\r\n")

    threading.Thread(target=trickle, daemon=True).start()
    url = f"http://127.0.0.1:{server.getsockname()[1]}/hooks/SECRETPATH"
    started = time.monotonic()
    try:
        failures = deliver(NotifyOptions(webhook=url, timeout=1.0), {"title": "t", "body": "b", "state": "failed"})
    finally:
        stop.set()
        server.close()
    assert failures == ["webhook: no answer within 1 s"]
    assert 1.0 <= time.monotonic() - started < 3.0
