"""pao_agents.states: what an event, a transcript and a screen say of an agent's state, and which one wins."""

from __future__ import annotations

import json
import os
from pathlib import Path

from pao_agents.light import observed_state
from pao_agents.states import REASON_LIMIT, agent_state, event_verdict, newest_state, quoted, transcript_error


def event(name: str, **payload) -> dict:
    return {"name": name, "at": 1.0, "event": {"hook_event_name": name, **payload}}


def transcript(tmp_path: Path, *entries: dict) -> str:
    path = tmp_path / "session.jsonl"
    path.write_text("".join(json.dumps(entry) + "\n" for entry in entries), encoding="utf-8")
    return str(path)


API_ERROR = {"type": "assistant", "isApiErrorMessage": True,
             "message": {"role": "assistant", "content": [{"type": "text", "text": "API Error: 400 bad request"}]}}
REPLY = {"type": "assistant", "message": {"role": "assistant", "content": [{"type": "text", "text": "Done."}]}}


def test_notifications_by_type() -> None:
    assert event_verdict(event("Notification", notification_type="idle_prompt", message="Claude is waiting for your input")).state == "ready"
    asked = event_verdict(event("Notification", notification_type="permission_prompt", message="Claude needs your permission to use Bash"))
    assert asked.state == "waiting" and "permission to use Bash" in asked.reason
    assert event_verdict(event("Notification", notification_type="auth_success", message="Signed in")).state is None
    assert event_verdict(event("Notification", message="Claude is waiting for your input")).state == "ready"  # no type


def test_gemini_s_tool_permission_says_the_tool_and_what_it_runs_not_its_own_message() -> None:
    shell = {"type": "exec", "title": "Confirm Shell Command", "command": "touch\tpao-stub-file\x07" + " x" * 300, "rootCommand": "touch"}
    asked = event_verdict(event("Notification", notification_type="ToolPermission",
                                message="Tool Shell requires execution", details=shell))
    assert asked.state == "waiting" and asked.reason.startswith('asks permission to use "Shell": "touch pao-stub-file x x')
    assert "requires execution" not in asked.reason and "\x07" not in asked.reason
    assert len(asked.reason) <= len('asks permission to use "Shell": ') + REASON_LIMIT + 2
    edit = {"type": "edit", "title": "Confirm Edit: app.py", "filePath": "/src/app.py", "fileDiff": "@@ secret diff @@"}
    assert event_verdict(event("Notification", notification_type="ToolPermission", message="Tool Edit requires editing",
                               details=edit)).reason == 'asks permission to use "Edit": "/src/app.py"'
    mcp = {"type": "mcp", "title": "Confirm MCP Tool", "serverName": "pao", "toolName": "search_memory",
           "toolDisplayName": "memory"}
    assert event_verdict(event("Notification", notification_type="ToolPermission", message="Tool memory requires MCP",
                               details=mcp)).reason == 'asks permission to use "memory": "pao/search_memory"'
    bare = event_verdict(event("Notification", notification_type="ToolPermission", message="Tool requires confirmation"))
    assert bare.reason == '"Tool requires confirmation"'  # no details: its own words, still quoted


def test_a_stop_failure_is_failed_with_the_error_quoted() -> None:
    verdict = event_verdict(event("StopFailure", error="rate_limit", error_details="429 slow down\nnow"))
    assert verdict.state == "failed" and verdict.reason == 'API error "rate_limit": "429 slow down now"'


def test_a_stop_whose_transcript_ends_in_an_api_error_is_failed(tmp_path: Path) -> None:
    failed = event("Stop", transcript_path=transcript(tmp_path, REPLY, API_ERROR))
    assert event_verdict(failed) == ("failed", 'API error: "API Error: 400 bad request"', "transcript")
    finished = event("Stop", transcript_path=transcript(tmp_path, API_ERROR, REPLY))
    assert event_verdict(finished).state == "ready"


def test_a_transcript_is_never_read_through_a_link_or_from_a_fifo(tmp_path: Path) -> None:
    real = transcript(tmp_path, API_ERROR)
    os.symlink(real, tmp_path / "link.jsonl")
    os.mkfifo(tmp_path / "fifo.jsonl")
    assert transcript_error(str(tmp_path / "link.jsonl")) is None
    assert transcript_error(str(tmp_path / "fifo.jsonl")) is None  # and no hang
    assert transcript_error("relative.jsonl") is None and transcript_error(real) == "API Error: 400 bad request"


def test_permission_requests_and_questions_say_what_they_ask() -> None:
    tool = event_verdict(event("PermissionRequest", tool_name="Bash", tool_input={"command": "rm -rf build"}))
    assert tool.state == "waiting" and tool.reason == 'asks permission to use "Bash": "rm -rf build"'
    question = {"questions": [{"question": "Which database?\x1b[31m", "options": []}]}
    asked = event_verdict(event("PreToolUse", tool_name="AskUserQuestion", tool_input=question))
    assert asked.state == "waiting" and asked.reason == 'asks a question: "Which database?"'  # the escape, whole
    assert event_verdict(event("PreToolUse", tool_name="Bash", tool_input={})).state == "busy"


def test_reasons_are_bounded() -> None:
    long = quoted("x" * 10_000)
    assert len(long) == REASON_LIMIT + 2 and long.endswith('…"')


def test_the_screen_fills_in_what_hooks_do_not_report() -> None:
    busy = [event("UserPromptSubmit", prompt="hi")]
    assert agent_state(busy, ("failed", "retrying")) == ("failed", "retrying", "screen")
    assert agent_state(busy, ("waiting", "menu")).state == "waiting"
    assert agent_state(busy, ("ready", None)) == ("busy", None, "hooks")  # the events know the turn is on
    assert agent_state([event("PermissionRequest", tool_name="Bash")], ("busy", None)).state == "waiting"
    assert agent_state([], ("busy", None)) == ("busy", None, "screen")  # hooks off: the screen alone
    assert agent_state([event("SessionStart")], None) is None and newest_state([event("SessionStart")]) is None


def test_an_agent_whose_hooks_report_nothing_is_read_from_its_screen(tmp_path: Path) -> None:
    (tmp_path / "events.jsonl").write_text("")
    extra = {"events": "hooks (--settings)", "agent_dir": str(tmp_path)}
    assert observed_state("busy", extra, None, True)[:3] == ("busy", None, "screen")
    line = {"event": {"hook_event_name": "StopFailure", "error": "server_error"}, "at": 5}
    (tmp_path / "events.jsonl").write_text(json.dumps(line) + "\n")
    assert observed_state("busy", extra, None, True)[:3] == ("failed", 'API error "server_error"', "hooks")
    assert observed_state("busy", extra, None, False)[0] == "dead"


def test_a_session_end_is_dead_unless_another_session_follows() -> None:
    exited = event_verdict(event("SessionEnd", reason="prompt_input_exit"))
    assert exited.state == "dead" and exited.reason == 'the CLI exited ("prompt_input_exit")'
    assert event_verdict(event("SessionEnd", reason="clear")).state is None  # /clear starts the next session
    busy, end, start = event("UserPromptSubmit"), event("SessionEnd", reason="other"), event("SessionStart", source="resume")
    assert newest_state([busy, end]) == "dead"
    assert newest_state([busy, end, start]) == "busy"  # resumed: the exit belongs to the session before
    assert newest_state([busy, end, start, event("Stop")]) == "ready"
