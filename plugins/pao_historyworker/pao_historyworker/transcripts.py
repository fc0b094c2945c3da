"""Claude Code transcripts (``~/.claude/projects/<path-key>/<session>.jsonl``) as exchanges.

An exchange is one user prompt with everything up to the next prompt: the
assistant's text replies and the text of tool results. Tool calls, meta lines,
slash-command echoes, summaries and sidechains are plumbing and are skipped.
Files are read from a byte offset so re-indexing only reads what was appended;
a last line without its newline is left for the next run.
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path
from typing import Any, Iterator

import attrs

from pao_core.jsonbound import loads
from pao_core.models import parse_timestamp

_NOISE_PREFIXES = (
    "<command-name>",
    "<command-message>",
    "<local-command-stdout>",
    "<local-command-stderr>",
    "Caveat: The messages below",
    "[Request interrupted",
)
PAO_TASK = re.compile(
    r"Your task: .*?\. (?:pao's briefing for it is in your (?:system prompt|context); use it"
    r"|Read .+ first \(what pao gathered for it\)"
    r"|Your briefing from pao is .+ \(already in your context\); use it), then start\.",
    re.DOTALL,
)
"""The first prompt pao itself types or hands a CLI (the hosts' ``nudge``): pao's words, not the user's history,
so an exchange that starts with it is indexed without them (the agent's replies stay)."""
TOOL_TEXT_LIMIT = 2000
"""Characters of one tool result kept for search (logs can be huge)."""


@attrs.frozen
class Exchange:
    """One user turn and the reply to it, from one transcript file."""

    session_id: str
    uuids: tuple[str, ...]
    start_offset: int
    timestamp: dt.datetime | None
    cwd: str
    git_branch: str
    prompt: str
    reply: str
    tools: str

    @property
    def id(self) -> str:
        return f"msg:{self.session_id}:{self.uuids[0]}"

    @property
    def project(self) -> str:
        return self.cwd


@attrs.frozen
class ReadResult:
    """Exchanges parsed from ``start`` on; ``resume`` is where the last (maybe unfinished) one began."""

    exchanges: list[Exchange]
    consumed: int
    resume: int
    lines: int
    malformed: int


def _blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return [block for block in content if isinstance(block, dict)]
    return []


def _tool_result_text(block: dict[str, Any]) -> str:
    content = block.get("content")
    if isinstance(content, str):
        return content[:TOOL_TEXT_LIMIT]
    parts = [b.get("text", "") for b in _blocks(content) if b.get("type") == "text" and isinstance(b.get("text"), str)]
    return "\n".join(parts)[:TOOL_TEXT_LIMIT]


def _texts(blocks: list[dict[str, Any]]) -> str:
    return "\n".join(b["text"].strip() for b in blocks if b.get("type") == "text" and isinstance(b.get("text"), str)).strip()


def _is_prompt(line: dict[str, Any], blocks: list[dict[str, Any]]) -> bool:
    if line.get("isMeta") or any(b.get("type") == "tool_result" for b in blocks):
        return False
    text = _texts(blocks)
    return bool(text) and not text.startswith(_NOISE_PREFIXES)


@attrs.define
class _Builder:
    """Accumulates the lines of the exchange being read."""

    start: int
    line: dict[str, Any]
    prompt: str
    uuids: list[str] = attrs.field(factory=list)
    replies: list[str] = attrs.field(factory=list)
    tools: list[str] = attrs.field(factory=list)

    def build(self) -> Exchange:
        line = self.line
        return Exchange(
            session_id=str(line.get("sessionId") or ""),
            uuids=tuple(self.uuids),
            start_offset=self.start,
            timestamp=parse_timestamp(line.get("timestamp")),
            cwd=str(line.get("cwd") or ""),
            git_branch=str(line.get("gitBranch") or ""),
            prompt=self.prompt,
            reply="\n".join(self.replies),
            tools="\n".join(self.tools),
        )


def _complete_lines(data: bytes, start: int) -> Iterator[tuple[int, int, bytes]]:
    """(offset, end, line) per newline-terminated line; a final unterminated line only if it parses."""
    offset = start
    pieces = data.split(b"\n")
    for index, piece in enumerate(pieces):
        last = index == len(pieces) - 1
        if last and (not piece.strip() or not _parses(piece)):
            return
        end = offset + len(piece) + (0 if last else 1)
        yield offset, end, piece
        offset = end


def _parses(piece: bytes) -> bool:
    try:
        return isinstance(loads(piece), dict)
    except ValueError:
        return False


def read_exchanges(path: Path, start: int = 0, counted_from: int = 0) -> ReadResult:
    """Parse the exchanges of ``path`` from byte ``start`` (the beginning of a line).

    Lines before ``counted_from`` (already counted by an earlier run) are parsed but
    not counted in ``lines`` and ``malformed``.
    """
    with open(path, "rb") as handle:
        handle.seek(start)
        data = handle.read()
    exchanges: list[Exchange] = []
    current: _Builder | None = None
    consumed = start
    lines = malformed = 0
    for offset, consumed, raw in _complete_lines(data, start):
        if not raw.strip():
            continue
        fresh = offset >= counted_from
        lines += fresh
        try:
            line = loads(raw)  # nested too deep: a malformed line, like any other
        except ValueError:
            line = None
        if not isinstance(line, dict):
            malformed += fresh
            continue
        kind = line.get("type")
        if kind not in ("user", "assistant") or line.get("isSidechain") or not isinstance(line.get("uuid"), str):
            continue
        message = line.get("message")
        blocks = _blocks(message.get("content")) if isinstance(message, dict) else []
        if kind == "user" and _is_prompt(line, blocks):
            if current is not None:
                _keep(exchanges, current)
            current = _Builder(start=offset, line=line, prompt=_own_words(_texts(blocks)), uuids=[line["uuid"]])
            continue
        if current is None:
            continue
        if kind == "assistant":
            text = _texts(blocks)
            if text:
                current.replies.append(text)
                current.uuids.append(line["uuid"])
        else:
            results = [_tool_result_text(b) for b in blocks if b.get("type") == "tool_result"]
            text = "\n".join(r for r in results if r.strip())
            if text:
                current.tools.append(text)
                current.uuids.append(line["uuid"])
    resume = consumed
    if current is not None:
        _keep(exchanges, current)
        resume = current.start
    return ReadResult(exchanges, consumed, resume, lines, malformed)


def _own_words(prompt: str) -> str:
    """The prompt as history keeps it: empty when pao wrote it (:data:`PAO_TASK`)."""
    return "" if PAO_TASK.fullmatch(prompt.strip()) else prompt


def _keep(exchanges: list[Exchange], current: _Builder) -> None:
    """Add the exchange unless nothing of it is left (pao's prompt, not answered yet)."""
    if current.prompt or current.replies or current.tools:
        exchanges.append(current.build())
