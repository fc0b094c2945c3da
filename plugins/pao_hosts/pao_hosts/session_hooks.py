"""Per-session hooks for Codex CLI and Gemini CLI: each event appended to the agent's log, the briefing at session start.

Both pinned CLIs run a SessionStart hook's command and add the ``additionalContext`` of
the JSON it prints to the session (measured: Codex 0.171.0 as a developer message before
the first turn, Gemini CLI 0.61.0 as a ``<hook_context>`` part of the history), as
Claude Code does. The hook prints ``session-start.json``, which pao writes owner-only
into the agent's private folder from the briefing: memory text never reaches a command
line (readable by every local user through ``ps``) nor the CLI's ``@`` import expansion,
and no interpreter starts per event (the append is the one ``sh`` of
``pao_agents.agentdir.append_command``; SessionStart adds a ``cat``), except pao's own, in the background,
for an event that changes the agent's state (``pao_agents.eventhook``).

Codex takes the hooks as ``-c hooks.EVENT=[...]`` overrides and asks the user to review
hooks it has not seen unless their trust is given too: ``-c hooks.state={...}`` with,
for each, the SHA-256 of its canonical JSON identity (event, handler), keyed by the
synthetic source of command-line overrides. Nothing is written to the user's
``config.toml``. Gemini CLI takes them in the per-agent system-defaults settings file
(``GEMINI_CLI_SYSTEM_DEFAULTS_PATH``), the lowest settings layer: the user's own hooks
still run.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

from pao_agents.spec import BRIEFING, EVENTS, event_hook_command, read_events

SESSION_START = "session-start.json"
HOOK_TIMEOUT = 10
"""Seconds a hook may take (Codex: part of the trusted identity; Gemini: milliseconds, converted)."""

CODEX_EVENTS = {
    "SessionStart": "session_start",
    "UserPromptSubmit": "user_prompt_submit",
    "PreToolUse": "pre_tool_use",
    "PostToolUse": "post_tool_use",
    "PermissionRequest": "permission_request",
    "Stop": "stop",
}
"""Codex's hook events pao listens to, with the name Codex keys their trust by."""
CODEX_OVERRIDE_SOURCE = "/<session-flags>/config.toml"
GEMINI_EVENTS = ("SessionStart", "BeforeAgent", "BeforeTool", "AfterTool", "Notification", "AfterAgent", "SessionEnd")
"""Gemini CLI's hook events pao listens to: names of its ``HookEventName`` enum in the pinned 0.61.0 bundle (a
finished turn: AfterAgent; waiting: the ToolPermission Notification; an exit: SessionEnd)."""


def session_start_file(agent_dir: str) -> dict[str, str]:
    """``session-start.json``: the output of the SessionStart hook, the briefing as its additional context.

    Read from the agent's ``briefing.md``, which the spawn wrote before asking for the session files.
    """
    briefing = Path(agent_dir, BRIEFING).read_text(encoding="utf-8")
    output = {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": briefing}}
    return {SESSION_START: json.dumps(output) + "\n"}


def hook_command(agent_dir: str, event: str) -> str:
    """The ``sh`` command of one event's hook: append the event (and record a change of state); at SessionStart,
    also print the briefing."""
    append = event_hook_command(Path(agent_dir, EVENTS), event)
    if event != "SessionStart":
        return append
    return f"{append}; cat {shlex.quote(str(Path(agent_dir, SESSION_START)))}"


def gemini_hooks(agent_dir: str) -> dict[str, list[dict[str, Any]]]:
    """The ``hooks`` settings of one Gemini CLI session (in its per-agent system-defaults file): each event appended
    to the agent's log (Gemini's timeouts are in milliseconds). The briefing stays on the file channel."""
    log = Path(agent_dir, EVENTS)
    return {event: [{"hooks": [{"type": "command", "command": event_hook_command(log, event),
                                "timeout": HOOK_TIMEOUT * 1000}]}] for event in GEMINI_EVENTS}


def _toml_string(text: str) -> str:
    return json.dumps(text)  # a JSON string is a valid TOML basic string


def codex_trust_hash(event_key: str, command: str) -> str:
    """What Codex stores as ``trusted_hash`` for one command hook: SHA-256 of its identity as sorted, compact JSON."""
    handler = {"async": False, "command": command, "timeout": HOOK_TIMEOUT, "type": "command"}
    identity = {"event_name": event_key, "hooks": [handler]}
    canonical = json.dumps(identity, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    import hashlib  # OpenSSL: only a Codex spawn needs it, not loading the plugin

    return "sha256:" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def codex_hook_args(agent_dir: str) -> list[str]:
    """``-c`` overrides registering pao's hooks for one Codex session, and trusting them."""
    args, trusted = [], []
    for event, key in CODEX_EVENTS.items():
        command = hook_command(agent_dir, event)
        handler = f'{{type="command",command={_toml_string(command)},timeout={HOOK_TIMEOUT}}}'
        args += ["-c", f"hooks.{event}=[{{hooks=[{handler}]}}]"]
        state_key = _toml_string(f"{CODEX_OVERRIDE_SOURCE}:{key}:0:0")
        trusted.append(f"{state_key}={{trusted_hash={_toml_string(codex_trust_hash(key, command))}}}")
    return [*args, "-c", "hooks.state={" + ",".join(trusted) + "}"]


def started_session(agent_dir: str | None) -> str | None:
    """The session id of the newest SessionStart event in the agent's log (``None``: no hooked session yet)."""
    if not agent_dir:
        return None
    starts = [event["event"].get("session_id") for event in read_events(Path(agent_dir, EVENTS)) if event["name"] == "SessionStart"]
    return next((session for session in reversed(starts) if isinstance(session, str)), None)
