"""What an agent is doing: its CLI's hook events first, the transcript and the screen for what they do not report.

Standard library only: ``pao list``'s light path reads agents' states before any plugin loads.

Each event the CLIs' hooks append to ``events.jsonl`` (:mod:`pao_agents.agentdir`) says one of:

- ``busy``: a prompt was submitted, a tool runs (UserPromptSubmit, PreToolUse, PostToolUse; Gemini's BeforeAgent,
  BeforeTool, AfterTool);
- ``ready``: the turn ended (Stop, Codex's agent-turn-complete, Gemini's AfterAgent), or Claude Code's
  ``idle_prompt`` Notification ("Claude is waiting for your input": idle, asking nothing);
- ``waiting``: the CLI asks the user (PermissionRequest: a tool's permission dialog or an AskUserQuestion menu;
  a ``permission_prompt`` or ``elicitation_dialog`` Notification; Gemini's ``ToolPermission`` Notification), with what
  it asks;
- ``failed``: an API error ended the turn (Claude Code 2.1's StopFailure; Gemini CLI's AfterAgent without a response
  whose chat's newest message is an API error; a Stop whose transcript ends in an
  API error message, as Claude Code 2.0 writes it), with the error quoted;
- ``dead``: the CLI exited (Claude Code's and Gemini's SessionEnd, unless it ends a session to start another: ``/clear``,
  ``/resume``); a SessionStart after it (``pao resume``) is a live session again;
- nothing (SessionStart, ``auth_success``, an event no table here names: a newer CLI's): the state stays what it was.

Hooks do not report an API request being retried, nor, on some versions, a failed turn or a dialog: where the
screen was read, a screen that shows ``failed``, ``waiting`` or ``blocked`` wins over an event's ``busy`` or
``ready`` (:func:`agent_state`). An agent with no event that implies a state (hooks off) is read from its screen.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import stat
from typing import Any, Iterable, Iterator, Mapping, NamedTuple

REASON_LIMIT = 200
"""Characters of a reason quoted from an event, a transcript or a screen (they hold the model's or the user's text)."""
TRANSCRIPT_TAIL = 64 * 1024
"""Bytes read of the end of a transcript to see whether its turn ended in an API error."""


class Verdict(NamedTuple):
    """A state with why (``reason``: quoted, bounded) and where it was read (``hooks``, ``transcript``, ``screen``)."""

    state: str | None
    reason: str | None = None
    source: str = "hooks"


STATE_OF_EVENT: Mapping[str, str | None] = {
    # Claude Code and Codex hooks
    "SessionStart": None,  # session confirmed; the state stays what the spawn recorded (a first prompt: busy)
    "SessionEnd": "dead",
    "UserPromptSubmit": "busy",
    "PreToolUse": "busy",
    "PostToolUse": "busy",
    "Stop": "ready",
    "StopFailure": "failed",
    "Notification": "waiting",
    "PermissionRequest": "waiting",
    # Codex notify
    "agent-turn-complete": "ready",
    # Gemini CLI hooks (its HookEventName enum, 0.61.0; SessionStart, SessionEnd and Notification as above)
    "BeforeAgent": "busy",
    "BeforeTool": "busy",
    "AfterTool": "busy",
    "AfterAgent": "ready",
}
"""What each CLI event says about the agent (``None``: nothing about busy or idle)."""
NOTIFICATION_STATES: Mapping[str, str | None] = {
    "idle_prompt": "ready", "permission_prompt": "waiting", "elicitation_dialog": "waiting",
    "agent_needs_input": "waiting", "worker_permission_prompt": "waiting", "auth_success": None,
    "elicitation_complete": None, "elicitation_response": None, "agent_completed": None,
    "ToolPermission": "waiting",
}
"""Notification types: Claude Code's (2.0.77 and 2.1.332), Gemini CLI's (``ToolPermission``, its only one in 0.61.0);
an unknown type with a message still means waiting."""
NO_RESPONSE = ("[no response text]", "", None)
"""Gemini CLI's AfterAgent ``prompt_response`` for a turn without the model's text (0.61.0): an API error's, or a
turn that said nothing; its chat tells which (:func:`gemini_turn_error`)."""
QUESTION_TOOLS = frozenset({"AskUserQuestion"})
CONFIRMED_TOOLS = {"exec": "Shell", "edit": "Edit"}
"""The tool a Gemini CLI confirmation of this type is about, as its dialog names it ("Allow execution of [Shell]?");
its ``title`` is the dialog's ("Confirm Shell Command")."""
NEXT_SESSION_REASONS = frozenset({"clear", "resume"})
"""SessionEnd reasons of a CLI that goes on with another session (Claude Code's ``/clear`` and ``/resume``)."""


def quoted(text: Any, limit: int = REASON_LIMIT) -> str:
    """``text`` on one line, escape sequences and control characters out, at most ``limit`` characters, in double
    quotes."""
    text = str(text)
    if "\x1b" in text:  # whole escape sequences out; the sanitiser loads only then (`pao list` stays light)
        from pao_core.sanitize import strip_controls

        text = strip_controls(text)
    flat = " ".join("".join(ch if ch.isprintable() else " " for ch in text).split())
    return json.dumps(flat if len(flat) <= limit else flat[: limit - 1] + "…", ensure_ascii=False)


def event_verdict(event: Mapping[str, Any]) -> Verdict:
    """The state one event (``{"name", "at", "event"}`` of :func:`pao_agents.agentdir.read_events`) implies, with why."""
    name, payload = event["name"], event.get("event") or {}
    state = STATE_OF_EVENT.get(name)
    if name == "Notification":
        return _notification(payload)
    if name == "PermissionRequest" or name == "PreToolUse" and payload.get("tool_name") in QUESTION_TOOLS:
        return Verdict("waiting", _asks(payload))
    if name == "StopFailure":
        return Verdict("failed", _failure(payload))
    if name == "SessionEnd":
        reason = payload.get("reason")
        return Verdict(None) if reason in NEXT_SESSION_REASONS else Verdict("dead", f"the CLI exited ({quoted(reason or 'other')})")
    if name == "Stop":
        error = transcript_error(payload.get("transcript_path"))
        if error is not None:
            return Verdict("failed", f"API error: {quoted(error)}", "transcript")
    if name == "AfterAgent" and payload.get("prompt_response") in NO_RESPONSE:  # Gemini ends a failed turn so too
        error = gemini_turn_error(payload.get("transcript_path"))
        if error is not None:
            return Verdict("failed", f"API error: {quoted(error)}", "transcript")
    if state == "busy":  # a request retried since (Claude Code 2.0 logs each attempt; no hook reports it)
        retry = transcript_error(payload.get("transcript_path"), retries_since=event["at"])
        if retry is not None:
            return Verdict("failed", retry, "transcript")
    return Verdict(state)


def _notification(payload: Mapping[str, Any]) -> Verdict:
    kind, message = payload.get("notification_type"), str(payload.get("message") or "")
    if kind in NOTIFICATION_STATES:
        state = NOTIFICATION_STATES[kind]
    elif "waiting for your input" in message.lower():  # an idle reminder of a version without the type
        state = "ready"
    else:
        state = "waiting" if message else None
    if state != "waiting":
        return Verdict(state)
    asked = _confirmation(payload.get("details"))
    return Verdict(state, asked or (quoted(message) if message else None))


def _confirmation(details: Any) -> str | None:
    """What a Gemini CLI ToolPermission notification asks about (its ``details``: the tool's title and the command,
    file, MCP tool or prompt it confirms), instead of its own words ("Tool Shell requires execution")."""
    if not isinstance(details, dict):
        return None
    tool = details.get("toolDisplayName") or CONFIRMED_TOOLS.get(details.get("type")) or details.get("title")
    if not tool:
        return None
    subject = details.get("command") or details.get("filePath") or details.get("fileName") or details.get("prompt")
    if not subject and details.get("toolName"):
        subject = f"{details.get('serverName') or '?'}/{details['toolName']}"
    return f"asks permission to use {quoted(tool)}" + (f": {quoted(subject)}" if subject else "")


def _asks(payload: Mapping[str, Any]) -> str:
    tool, given = payload.get("tool_name"), payload.get("tool_input")
    if tool in QUESTION_TOOLS and isinstance(given, dict):
        questions = [q.get("question") for q in given.get("questions") or [] if isinstance(q, dict)]
        return "asks a question: " + quoted(" / ".join(str(q) for q in questions if q) or tool)
    detail = given.get("command") or given.get("file_path") or given.get("description") if isinstance(given, dict) else None
    return f"asks permission to use {quoted(tool or 'a tool')}" + (f": {quoted(detail)}" if detail else "")


def _failure(payload: Mapping[str, Any]) -> str:
    error, details = payload.get("error") or "unknown", payload.get("error_details")
    message = details or payload.get("last_assistant_message")
    return f"API error {quoted(error)}" + (f": {quoted(message)}" if message else "")


def transcript_error(path: Any, retries_since: float | None = None) -> str | None:
    """The text of a Claude Code transcript's last assistant entry when it is an API error (``isApiErrorMessage``);
    with ``retries_since``, instead what its newest entry says of a request retried at that time (epoch seconds) or
    later (a ``system`` ``api_error`` entry); ``None`` otherwise."""
    for entry in _entries(reversed(_transcript_tail(path))):
        if entry.get("type") not in ("assistant", "user", "system"):
            continue
        if retries_since is not None:
            return _retry(entry, retries_since)
        if entry.get("type") == "assistant":
            return _entry_text(entry) if entry.get("isApiErrorMessage") is True else None
    return None


def gemini_turn_error(path: Any) -> str | None:
    """The text of a Gemini CLI chat's newest message when it is an API error: the chat appends an ``error`` record
    (``[API Error: ...]``) and sets its conversation's messages (``$set``); the newest of them by time decides."""
    messages: list[tuple[str, str, Any]] = []
    for entry in _entries(_transcript_tail(path)):
        update = entry.get("$set")
        listed = update.get("messages") if isinstance(update, dict) else [entry]
        for message in listed if isinstance(listed, list) else ():
            if isinstance(message, dict) and message.get("type") in ("user", "gemini", "error"):
                messages.append((str(message.get("timestamp") or ""), message["type"], message.get("content")))
    newest = max(messages, default=None, key=lambda message: message[0])
    return _api_error(str(newest[2])) if newest is not None and newest[1] == "error" else None


def _api_error(content: str) -> str:
    """``[API Error: {"error": {code, message, status}}]`` said as ``400 INVALID_ARGUMENT: message``; else as it is."""
    inner = content[len("[API Error: "):-1] if content.startswith("[API Error: ") and content.endswith("]") else ""
    try:
        error = json.loads(inner)["error"]
        return f"{error['code']} {error['status']}: {error['message']}"
    except (ValueError, KeyError, TypeError):
        return content


def _transcript_tail(path: Any) -> list[bytes]:
    """The lines of a transcript's last ``TRANSCRIPT_TAIL`` bytes: only an absolute ``.jsonl`` regular file is read
    (never through a symlink, never a FIFO or a device an event named)."""
    if not isinstance(path, str) or not os.path.isabs(path) or not path.endswith(".jsonl"):
        return []
    try:
        descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return []
    with os.fdopen(descriptor, "rb") as handle:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            return []
        size = handle.seek(0, os.SEEK_END)
        handle.seek(max(0, size - TRANSCRIPT_TAIL))
        return handle.read().splitlines()[1 if size > TRANSCRIPT_TAIL else 0:]


def _entries(lines: Iterable[bytes]) -> Iterator[dict[str, Any]]:
    """The JSON objects among ``lines``, parsed as they are asked for (a reader that stops early parses no more)."""
    for line in lines:
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict):
            yield entry


def _retry(entry: Mapping[str, Any], since: float) -> str | None:
    if entry.get("type") != "system" or entry.get("subtype") != "api_error":
        return None
    try:
        at = dt.datetime.fromisoformat(str(entry.get("timestamp")).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None
    if at < int(since):  # an earlier turn's
        return None
    attempt, most = entry.get("retryAttempt"), entry.get("maxRetries")
    counted = isinstance(attempt, int) and isinstance(most, int)
    return "an API request failed and is retried" + (f" (attempt {attempt} of {most})" if counted else "")


def _entry_text(entry: Mapping[str, Any]) -> str:
    content = (entry.get("message") or {}).get("content") if isinstance(entry.get("message"), dict) else None
    if isinstance(content, list):
        return " ".join(str(block.get("text")) for block in content if isinstance(block, dict) and block.get("text"))
    return str(content or entry.get("error") or "API error")


def event_state(event: Mapping[str, Any]) -> str | None:
    """The agent state one event implies, or ``None`` when it says nothing about it."""
    return event_verdict(event).state


def newest_verdict(events: Iterable[Mapping[str, Any]]) -> Verdict | None:
    """The verdict of the newest event that implies a state, or ``None`` (an exit before the newest SessionStart
    belongs to a session since resumed: it says nothing)."""
    restarted = False
    for event in reversed(list(events)):
        restarted = restarted or event["name"] == "SessionStart"
        verdict = event_verdict(event)
        if verdict.state is not None and not (restarted and verdict.state == "dead"):
            return verdict
    return None


def newest_state(events: Iterable[Mapping[str, Any]]) -> str | None:
    """The state of the newest event that implies one, or ``None``."""
    verdict = newest_verdict(events)
    return None if verdict is None else verdict.state


SCREEN_FILLS_IN = frozenset({"failed", "waiting", "blocked"})
"""Screen states that hooks may not report (a retried request, a dialog of a version without its event)."""


def agent_state(events: Iterable[Mapping[str, Any]], screen: tuple[str, str | None] | None) -> Verdict | None:
    """The agent's state: its newest event's, unless the screen (``(state, reason)`` of pao's detectors, ``None`` when
    not read) shows what hooks do not report; with no event that implies a state, the screen's; ``None``: neither."""
    hooked = newest_verdict(events)
    if screen is not None and screen[0] not in (None, "unknown"):
        if hooked is None or screen_fills_in(hooked.state, screen[0]):
            return Verdict(screen[0], screen[1], "screen")
        if hooked.source == "transcript" and screen[0] == hooked.state and screen[1]:
            return Verdict(screen[0], screen[1], "screen")  # the screen quotes the error the transcript only counts
    return hooked


def screen_fills_in(hooked: str | None, on_screen: str) -> bool:
    """Whether what the screen shows overrides the state the hooks gave (an idle or working agent's events say
    nothing of a request being retried, nor, on some versions, of a failed turn or a dialog)."""
    return hooked in ("busy", "ready") and on_screen in SCREEN_FILLS_IN
