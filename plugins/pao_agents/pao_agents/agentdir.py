"""Each agent's private folder ``$PAO_HOME/agents/<name>/`` (0700) and the event log its CLI's hooks append to.

The folder holds what pao gives one agent session and nothing of the user's folder:
``briefing.md`` (read by the CLI through its own flag), the host's per-session
settings (hooks) and ``events.jsonl``, one line per CLI event::

    {"event": <the JSON the CLI passed to its hook>, "at": <epoch seconds>}

A hook appends with one ``sh`` (no Python per event): ``printf`` of a line that
``tr`` freed of raw newlines, ``>>`` (O_APPEND). Lines that do not parse (an
interleaved or cut write, a CLI that passed something other than JSON) are
skipped by the reader, and ``at`` is written after the event so a forged key
inside the event can never override it.
"""

from __future__ import annotations

import os
import shlex
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping

from pao_core.files import atomic_write, private_dir
from pao_core.jsonbound import loads

if TYPE_CHECKING:
    from pao_core.config import PaoConfig
    from pao_core.contracts import HostAgent, McpWiring
    from pao_core.models import SpawnRequest
    from pao_core.plugins import Plugins

EVENTS = "events.jsonl"
BRIEFING = "briefing.md"
TAIL_BYTES = 64 * 1024
"""How much of the end of the event log is read for an agent's state."""

STATE_OF_EVENT: Mapping[str, str | None] = {
    # Claude Code and Codex hooks
    "SessionStart": None,  # session confirmed; the state stays what the spawn recorded (a first prompt: busy)
    "UserPromptSubmit": "busy",
    "PreToolUse": "busy",
    "PostToolUse": "busy",
    "Stop": "ready",
    "Notification": "waiting",
    "PermissionRequest": "waiting",
    # Codex notify
    "agent-turn-complete": "ready",
    # Gemini CLI hooks
    "BeforeAgent": "busy",
    "AfterAgent": "ready",
}
"""What each CLI event says about the agent (``None``: nothing about busy or idle)."""


def agent_dir(home: str | os.PathLike[str], name: str) -> Path:
    """The agent's private folder (created 0700 when missing); ``name`` is a registry-checked agent name."""
    private_dir(Path(home) / "agents")
    return private_dir(Path(home) / "agents" / name)


def fresh_agent_dir(home: str | os.PathLike[str], name: str) -> Path:
    """The agent's folder emptied of anything an earlier agent of the same name left (a crash), with an empty log."""
    remove_agent_dir(home, name)
    path = agent_dir(home, name)
    atomic_write(path / EVENTS, "", mode=0o600)
    return path


def remove_agent_dir(home: str | os.PathLike[str], name: str) -> None:
    path = Path(home) / "agents" / name
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.is_dir():
        shutil.rmtree(path, ignore_errors=True)


def write_private(folder: Path, files: Mapping[str, str]) -> None:
    """Write each named file into the agent's folder, owner-only (it holds memory text)."""
    for filename, text in files.items():
        atomic_write(folder / filename, text, mode=0o600)


def session_mcp(
    request: SpawnRequest, host_agent: HostAgent, config: PaoConfig, plugins: Plugins, environ: Mapping[str, str]
) -> McpWiring:
    """The session's MCP servers (``pao_session_mcp_servers``) in the host's terms, their files written into
    the agent's folder; the same at spawn and at resume. An empty wiring: none, or a host without MCP."""
    import attrs  # records: spawn and resume only (``pao list`` reads the event log below before any loads)

    from pao_core.contracts import McpWiring  # records: spawn and resume only, like attrs

    servers = plugins.session_mcp_servers(config, request)
    wiring = host_agent.mcp_wiring(servers, Path(config.home) / "agents" / request.name, environ) if servers else None
    if not wiring or not (wiring.args or wiring.files or wiring.env):
        return McpWiring()
    files = {**{name: text for server in servers for name, text in server.files.items()}, **wiring.files}
    if files:
        write_private(agent_dir(config.home, request.name), files)
    return attrs.evolve(wiring, servers=tuple(servers))


def append_command(log: Path, *, from_argument: bool = False) -> str:
    """The ``sh`` command a CLI hook runs to append its event (stdin, or ``$1`` for Codex's notify) to ``log``."""
    source = "printf %s \"$1\" | tr -d '\\n\\r'" if from_argument else "tr -d '\\n\\r'"
    line = "'{\"event\":%s,\"at\":%s}\\n'"
    return f'umask 077; e=$({source}); printf {line} "${{e:-null}}" "$(date +%s)" >> {shlex.quote(str(log))}'


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [key for key, _ in pairs]
    if len(keys) != len(set(keys)):
        raise ValueError("duplicate key")
    return dict(pairs)


def read_events(log: Path, tail_bytes: int = TAIL_BYTES) -> list[dict[str, Any]]:
    """The newest events of ``log`` (oldest first), each ``{"name", "at", "event"}``; malformed lines skipped."""
    try:
        with log.open("rb") as handle:
            size = handle.seek(0, os.SEEK_END)
            handle.seek(max(0, size - tail_bytes))
            data = handle.read()
    except OSError:
        return []
    lines = data.split(b"\n")
    if len(data) == tail_bytes and size > tail_bytes:
        lines = lines[1:]  # the first line was cut by the tail
    events = []
    for line in lines:
        try:
            entry = loads(line, object_pairs_hook=_unique_keys)  # nested too deep: skipped, like bad JSON
        except (ValueError, UnicodeDecodeError):
            continue
        event = entry.get("event") if isinstance(entry, dict) else None
        at = entry.get("at") if isinstance(entry, dict) else None
        if not isinstance(event, dict) or not isinstance(at, (int, float)):
            continue
        name = event.get("hook_event_name") or event.get("type")
        if isinstance(name, str):
            events.append({"name": name, "at": float(at), "event": event})
    return events


def event_state(event: Mapping[str, Any]) -> str | None:
    """The agent state one event implies, or ``None`` when it says nothing about it."""
    state = STATE_OF_EVENT.get(event["name"])
    if state == "waiting" and _is_idle_reminder(event["event"]):
        return "ready"
    return state


def _is_idle_reminder(payload: Mapping[str, Any]) -> bool:
    """Claude Code's "waiting for your input" notification: the agent is idle, not asking anything."""
    kind = payload.get("notification_type")
    message = str(payload.get("message") or "").lower()
    return kind == "idle_prompt" or "waiting for your input" in message


def newest_state(events: Iterable[Mapping[str, Any]]) -> str | None:
    """The state of the newest event that implies one, or ``None``."""
    for event in reversed(list(events)):
        state = event_state(event)
        if state is not None:
            return state
    return None


def session_receipt(events: Iterable[Mapping[str, Any]], session_id: str | None) -> float | None:
    """When the CLI's own SessionStart event confirmed the session (of ``session_id`` when known)."""
    for event in events:
        if event["name"] == "SessionStart" and (session_id is None or event["event"].get("session_id") == session_id):
            return event["at"]
    return None
