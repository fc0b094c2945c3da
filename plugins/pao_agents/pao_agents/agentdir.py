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
import re
import shlex
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, Iterable, Iterator, Mapping

from pao_core.files import atomic_write, private_dir
from pao_core.jsonbound import loads
from pao_agents.notifylog import LOCK_FILE, LOCK_WAIT
from pao_agents.states import STATE_OF_EVENT, event_state, newest_state  # noqa: F401 - their home before states.py

if TYPE_CHECKING:
    from pao_core.config import PaoConfig
    from pao_agents.spec.contracts import HostAgent, McpWiring
    from pao_agents.spec.records import SpawnRequest
    from pao_core.plugins import Plugins

EVENTS = "events.jsonl"
BRIEFING = "briefing.md"
STATE_FILE = "state"
"""The agent's recorded state, rewritten with every change under the registry's lock (``AgentContext.set_state``):
what a busy event's hook compares to with ``sh``'s builtin ``read`` (``pao_agents.eventhook``)."""
TAIL_BYTES = 64 * 1024
"""How much of the end of the event log is read for an agent's state."""
EVENTS_LIMIT = 1024 * 1024
"""Bytes the event log may reach before the recorder trims it (:func:`pao_agents.notifylog.trim_log`)."""
EVENTS_KEEP = 4 * TAIL_BYTES
"""Bytes of its newest lines a trim keeps: more than any reader of the log reads (:data:`TAIL_BYTES`)."""
LINE_LIMIT = 64 * 1024
"""A longer line of the log is not parsed: its name and time stand for it (:func:`read_events`)."""
OVERSIZE_READ = 4096
"""Bytes read of an over-long line (its start and its last 64 bytes)."""
SCAN_LIMIT = 16 * 1024 * 1024
"""How far back from its end the log is scanned for whole lines."""
EVENT_LIMIT = 16 * 1024
"""Characters of one event a hook appends whole; a longer one is appended as its name alone."""
SYSTEM_PATH = "/usr/bin:/bin"
"""Where a hook's ``sh`` finds ``tr``, ``grep``, ``head`` and ``date`` (Linux, macOS and the BSDs)."""

_HOOK_NAME = re.compile(rb'^\{"event": ?\{[^{}]*?"hook_event_name": ?"([A-Za-z_-]{1,64})"')
_AT_TAIL = re.compile(rb'\}, ?"at": ?([0-9]{1,12}(?:\.[0-9]{1,9})?)\}\r?$')


def agent_dir(home: str | os.PathLike[str], name: str) -> Path:
    """The agent's private folder (created 0700 when missing); ``name`` is a registry-checked agent name."""
    private_dir(Path(home) / "agents")
    return private_dir(Path(home) / "agents" / name)


def fresh_agent_dir(home: str | os.PathLike[str], name: str) -> Path:
    """The agent's folder emptied of anything an earlier agent of the same name left (a crash), with an empty log and
    the ``state`` file its hooks read saying ``starting``."""
    remove_agent_dir(home, name)
    path = agent_dir(home, name)
    atomic_write(path / EVENTS, "", mode=0o600)
    atomic_write(path / STATE_FILE, "starting\n", mode=0o600)  # the record's state until the spawn registers it
    return path


def remove_agent_dir(home: str | os.PathLike[str], name: str) -> None:
    """The agent's folder gone. It is renamed away first: the hooks of a CLI still exiting (its SessionEnd) append
    by path, and would otherwise refill a folder being removed, which then stays."""
    path = Path(home) / "agents" / name
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.is_dir():
        removed = path.with_name(f".{name}.removed-{os.getpid()}-{os.urandom(4).hex()}")
        try:
            os.rename(path, removed)
        except OSError:
            removed = path
        shutil.rmtree(removed, ignore_errors=True)


def write_private(folder: Path, files: Mapping[str, str]) -> None:
    """Write each named file into the agent's folder, owner-only (it holds memory text)."""
    for filename, text in files.items():
        atomic_write(folder / filename, text, mode=0o600)


def session_mcp(
    request: SpawnRequest, host_agent: HostAgent, config: PaoConfig, plugins: Plugins, environ: Mapping[str, str]
) -> McpWiring:
    """The session's MCP servers (``pao_session_mcp_servers``) in the host's terms, their files written into
    the agent's folder; the same at spawn and at resume. An empty wiring: none, or a host without MCP."""
    wiring = session_wiring(request, host_agent, config, plugins, environ)
    if wiring.files:
        write_private(agent_dir(config.home, request.name), wiring.files)
    return wiring


def session_wiring(
    request: SpawnRequest, host_agent: HostAgent, config: PaoConfig, plugins: Plugins, environ: Mapping[str, str]
) -> McpWiring:
    """:func:`session_mcp` before anything is written: ``files`` holds the servers' and the host's files."""
    import attrs  # records: spawn and resume only (``pao list`` reads the event log below before any loads)

    from pao_agents.spec.calls import session_mcp_servers  # pluggy's hooks: spawn and resume only
    from pao_agents.spec.contracts import McpWiring  # records: spawn and resume only, like attrs

    servers = session_mcp_servers(plugins, config, request)
    wiring = host_agent.mcp_wiring(servers, Path(config.home) / "agents" / request.name, environ) if servers else None
    if not wiring or not (wiring.args or wiring.files or wiring.env):
        return McpWiring()
    files = {**{name: text for server in servers for name, text in server.files.items()}, **wiring.files}
    return attrs.evolve(wiring, files=files, servers=tuple(servers))


def append_command(log: Path, *, from_argument: bool = False) -> str:
    """The ``sh`` command a CLI hook runs to append its event (stdin, or ``$1`` for Codex's notify) to ``log``.

    The CLI runs it in the agent's folder: it leaves for ``/`` and looks programs up in the system's own
    folders only, so no ``tr`` or ``date`` of the folder (or of a relative ``PATH`` entry) runs. An event
    over ``EVENT_LIMIT`` characters (a pasted prompt) is kept as its name alone (``"truncated": true``).
    The append holds the folder's log lock (:mod:`pao_agents.notifylog`) while the recorder may trim the log.
    """
    source = "printf %s \"$1\" | tr -d '\\n\\r'" if from_argument else "tr -d '\\n\\r'"
    name = "grep -o '\"hook_event_name\": *\"[A-Za-z_-]*\"' | head -n 1"
    bound = (f'if [ ${{#pao_event}} -gt {EVENT_LIMIT} ]; then pao_name=$(printf %s "$pao_event" | {name}); '
             'pao_event="{$pao_name${pao_name:+,}\\"truncated\\":true}"; fi')
    line = "'{\"event\":%s,\"at\":%s}\\n'"
    target = shlex.quote(os.path.abspath(log))
    lock = shlex.quote(os.path.join(os.path.dirname(os.path.abspath(log)), LOCK_FILE))
    # ${pao_event:=null}, not :-null: Gemini CLI expands ${NAME:-default}, and $NAME from its own environment, in
    # its settings files before it runs a hook (so the names are ones no environment holds)
    append = f'printf {line} "${{pao_event:=null}}" "$(date +%s)" >> {target}'
    # under the log's lock where flock(1) exists (a trim then never loses the line); without it, or the lock, unlocked
    return (f'umask 077; cd / || exit 0; PATH={SYSTEM_PATH}; pao_event=$({source}); {bound}; '
            f'{{ flock -w {LOCK_WAIT:g} 9; {append}; }} 9>>{lock} 2>/dev/null || {append}')


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [key for key, _ in pairs]
    if len(keys) != len(set(keys)):
        raise ValueError("duplicate key")
    return dict(pairs)


def read_events(log: Path, tail_bytes: int = TAIL_BYTES) -> list[dict[str, Any]]:
    """The newest events of ``log`` (oldest first), each ``{"name", "at", "event"}``; malformed lines skipped.

    Whole lines, newest first, until ``tail_bytes`` of them are read. A line over ``LINE_LIMIT`` bytes
    (a hook event with a huge prompt, written by an older pao) is not parsed: its name and time, read
    from its ends, stand for it, so the lines before it still count and its state is not lost.
    """
    try:
        with log.open("rb") as handle:
            return _newest_events(handle, tail_bytes)
    except OSError:
        return []


def _newest_events(handle: BinaryIO, tail_bytes: int) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    taken = 0
    for start, end, line in _lines_backwards(handle, SCAN_LIMIT):
        if taken >= tail_bytes:
            break
        taken += (end - start if line is not None else OVERSIZE_READ) + 1  # what was read of it
        event = _parse_line(line) if line is not None else _oversize_event(handle, start, end)
        if event is not None:
            events.append(event)
    events.reverse()
    return events


def _lines_backwards(handle: BinaryIO, limit: int) -> Iterator[tuple[int, int, bytes | None]]:
    """``(start, end, text)`` of each line of ``handle``, the newest first, over at most ``limit`` bytes
    from its end; ``text`` is ``None`` for a line over ``LINE_LIMIT`` bytes (never held whole)."""
    size = end = position = handle.seek(0, os.SEEK_END)
    rest = b""  # the end of the current line, read with the chunk after this one
    while position > 0 and size - position < limit:
        step = min(TAIL_BYTES, position)
        position -= step
        handle.seek(position)
        chunk = handle.read(step)
        cut, newline = len(chunk), chunk.rfind(b"\n")
        while newline != -1:
            start = position + newline + 1
            if start < end:
                yield start, end, chunk[newline + 1:cut] + rest if end - start <= LINE_LIMIT else None
            rest, cut, end = b"", newline, position + newline
            newline = chunk.rfind(b"\n", 0, newline)
        rest = chunk[:cut] + rest if end - position <= LINE_LIMIT else b""
    if position == 0 and end > 0:
        yield 0, end, rest if end <= LINE_LIMIT else None


def _oversize_event(handle: BinaryIO, start: int, end: int) -> dict[str, Any] | None:
    """An over-long line's event: its name (near the start of the CLI's JSON) and ``at`` (the line's end)."""
    handle.seek(start)
    head = handle.read(OVERSIZE_READ - 64)
    handle.seek(end - 64)
    name, at = _HOOK_NAME.search(head), _AT_TAIL.search(handle.read(64))
    if not name or not at:
        return None
    return {"name": name.group(1).decode(), "at": float(at.group(1)), "event": {"truncated": True}}


def _parse_line(line: bytes) -> dict[str, Any] | None:
    try:
        entry = loads(line, object_pairs_hook=_unique_keys)  # nested too deep: skipped, like bad JSON
    except (ValueError, UnicodeDecodeError):
        return None
    event = entry.get("event") if isinstance(entry, dict) else None
    at = entry.get("at") if isinstance(entry, dict) else None
    if not isinstance(event, dict) or not isinstance(at, (int, float)):
        return None
    name = event.get("hook_event_name") or event.get("type")
    return {"name": name, "at": float(at), "event": event} if isinstance(name, str) else None


RECEIPT_TIMEOUT = 10.0
"""Seconds ``pao send`` waits for the CLI's event of the submitted prompt, twice at most (a retry between)."""
PROMPT_EVENTS = frozenset({"UserPromptSubmit", "BeforeAgent"})
"""The events a CLI reports a submitted prompt with (Claude Code and Codex; Gemini CLI), its text in ``prompt``."""


def prompt_receipt(events: Iterable[Mapping[str, Any]], since: float, fragment: str) -> float | None:
    """When the CLI reported a prompt submitted at ``since`` (whole seconds: a hook's ``date +%s``) or later whose
    text holds ``fragment`` (whitespace ignored), or one too long to keep its text (``truncated``), or one whose
    event carries no ``prompt`` at all (a CLI version that names or shapes it otherwise still confirms a submit)."""
    for event in events:
        if event["name"] in PROMPT_EVENTS and event["at"] >= int(since):
            prompt = event["event"].get("prompt")
            if event["event"].get("truncated") or "prompt" not in event["event"] or \
                    isinstance(prompt, str) and fragment in "".join(prompt.split()):
                return event["at"]
    return None


def session_receipt(events: Iterable[Mapping[str, Any]], session_id: str | None) -> float | None:
    """When the CLI's own SessionStart event confirmed the session (of ``session_id`` when known)."""
    for event in events:
        if event["name"] == "SessionStart" and (session_id is None or event["event"].get("session_id") == session_id):
            return event["at"]
    return None
