"""What the Codex and Gemini CLI profiles share: options, the nudge, the briefing block, transcripts."""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any, Iterable

import attrs

from pao_core.models import SpawnRequest

CLOCK_SLACK = dt.timedelta(seconds=2)
"""A session may carry a start time this much before the record's (clock granularity)."""


@attrs.frozen
class HostOptions:
    """``[hosts.NAME]``: the CLI's executable (default: the host's own name on PATH), extra arguments, extra environment."""

    command: str | None = None
    args: tuple[str, ...] = ()
    env: dict[str, str] = attrs.field(factory=dict)


def resolve_executable(options: HostOptions, default: str, install_hint: str) -> str:
    """The configured command, or ``default`` found on PATH; a one-line error naming the fix otherwise."""
    if options.command:
        return options.command
    found = shutil.which(default)
    if not found:
        from pao_core.errors import PaoError

        raise PaoError(f"no `{default}` on PATH: {install_hint}")
    return found


def cli_version(executable: str, timeout: float = 10.0) -> str | None:
    """``EXECUTABLE --version``'s version number, or ``None`` when it cannot be run."""
    try:
        done = subprocess.run([executable, "--version"], capture_output=True, text=True, timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = re.search(r"\b(\d+\.\d+\.\d+)\b", done.stdout)
    return match.group(1) if match else None


def nudge_text(request: SpawnRequest, briefing_file: str) -> str:
    """One line asking the agent to take up the topic with its briefing (already in its context)."""
    topic = " ".join(request.topic.split())
    return f"Your task: {topic}. Your briefing from pao is {os.path.basename(briefing_file)} (already in your context); use it, then start."


def embedded_block(briefing_file: str, markdown: str, budget_chars: int) -> str:
    """The briefing's own text for a context file that has no import syntax, cut to the budget.

    HTML comment openers are defused so that memory text can never end pao's marked block.
    """
    name = os.path.basename(briefing_file)
    body = markdown.replace("<!--", "<! --").strip()
    if len(body) > budget_chars:
        cut = body.rfind("\n", 0, budget_chars)
        body = body[: cut if cut > 0 else budget_chars].rstrip() + f"\n\n(cut to {budget_chars} characters; the rest is in {name})"
    return f"pao's briefing for this task (a copy of {name}):\n\n{body}"


def session_started(meta: dict[str, Any], key: str) -> dt.datetime | None:
    """The aware start time under ``key`` of a transcript's header, if it parses."""
    value = meta.get(key)
    if not isinstance(value, str):
        return None
    try:
        started = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return started if started.tzinfo else started.replace(tzinfo=dt.timezone.utc)


def first_json_line(path: Path) -> dict[str, Any] | None:
    """The first line of a JSON-lines file as an object, or ``None`` (missing, empty, not JSON)."""
    try:
        with path.open(encoding="utf-8") as handle:
            line = handle.readline()
        value = json.loads(line)
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    return value if isinstance(value, dict) else None


def earliest_since(sessions: Iterable[tuple[dt.datetime, str]], since: dt.datetime) -> str | None:
    """The id of the first session that started at or after ``since`` (less the clock slack)."""
    floor = since - CLOCK_SLACK
    chosen = min(((started, sid) for started, sid in sessions if started >= floor), default=None)
    return chosen[1] if chosen else None


def parse_problem(path: Path) -> str | None:
    """Why pao could not edit ``path`` (a JSON object or TOML file), or ``None``; a missing file is fine."""
    import tomllib

    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        return f"cannot be read ({exc})"
    if path.suffix == ".toml":
        try:
            tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            return f"is not valid TOML ({exc})"
        return None
    try:
        data = json.loads(text) if text.strip() else {}
    except ValueError as exc:
        return f"is not valid JSON ({exc})"
    return None if isinstance(data, dict) else f"holds a JSON {type(data).__name__}, not an object"


def state_files(paths: Iterable[Path]) -> list[tuple[str, str | None]]:
    """Each file a host's pre-seed edits, with the reason it cannot be edited (``None``: it can)."""
    return [(str(path), parse_problem(path)) for path in paths]
