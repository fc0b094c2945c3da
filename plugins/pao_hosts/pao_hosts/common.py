"""What the host profiles share: options, the command line, version, nudge, briefing block, settings, transcripts."""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any, Callable, ClassVar, Iterable, Mapping, Sequence

import attrs

from pao_agents.spec import HostAgent
from pao_core.errors import ConfigError, PaoError
from pao_core.models import parse_timestamp
from pao_agents.spec import SpawnRequest

HEADLESS_MARKERS = ("CI", "CONTINUOUS_INTEGRATION", "GITHUB_ACTIONS")
"""Variables by which CLIs decide they run unattended in a CI job."""

CLOCK_SLACK = dt.timedelta(seconds=2)
"""A session may carry a start time this much before the record's (clock granularity)."""


@attrs.frozen
class HostOptions:
    """``[hosts.NAME]``: the CLI's executable (default: the host's own name on PATH), extra arguments, extra environment."""

    command: str | None = None
    args: tuple[str, ...] = ()
    env: dict[str, str] = attrs.field(factory=dict)
    permission_mode: str = "default"
    """One of :data:`pao_core.contracts.PERMISSION_MODES` (a profile narrows it to those its CLI has)."""


class CliProfile(HostAgent):
    """What every host profile does alike; a profile names its program, install hint and measured versions.

    Mixed into an attrs class whose ``options`` field is a :class:`HostOptions` (or a subclass).
    """

    options: HostOptions
    name: str
    program: ClassVar[str]
    """The CLI's executable name, looked up on PATH unless ``command`` is configured."""
    install_hint: ClassVar[str]
    versions: ClassVar[tuple[str, ...]]
    """Versions whose screens and settings pao was measured against."""

    def permission_mode(self) -> str:
        """The permission mode the agent starts in (pao's name, see :data:`pao_core.contracts.PERMISSION_MODES`)."""
        return "bypass" if self.options.permission_mode == "bypassPermissions" else self.options.permission_mode

    def executable(self) -> list[str]:
        """The command that runs the CLI, without pao's flags; a one-line error naming the fix when missing.

        A configured ``command`` (or ``PAO_<HOST>_COMMAND``) is split like a shell splits
        words, so it may carry arguments or a quoted path with spaces; no shell runs it.
        """
        if self.options.command:
            try:
                words = shlex.split(self.options.command)
            except ValueError as exc:
                raise ConfigError(f"hosts.{self.name}.command: cannot parse {self.options.command!r}: {exc}") from None
            if not words:
                raise ConfigError(f"hosts.{self.name}.command: is empty")
            return words
        found = shutil.which(self.program)
        if not found:
            raise PaoError(f"no `{self.program}` on PATH: {self.install_hint}")
        return [found]

    def launch(self, *flags: str) -> list[str]:
        """The executable, pao's ``flags``, then the configured extra arguments."""
        return [*self.executable(), *flags, *self.options.args]

    def environment(self, request: SpawnRequest) -> Mapping[str, str | None]:
        """The configured extras, and ``None`` for each variable that would make the CLI headless.

        pao passes its own environment to the agent already. An agent pao starts runs in a
        terminal the user can attach to, so CI markers inherited from pao's own
        environment must not switch it into unattended mode (measured: Claude Code 2.0.x
        draws no input cursor with any ``CI`` set; Gemini CLI exits at once with
        ``CI=true``). A marker set in ``[hosts.NAME] env`` is kept.
        """
        return {**dict.fromkeys(HEADLESS_MARKERS), **self.options.env}

    def nudge(self, request: SpawnRequest, briefing_file: str) -> str:
        return nudge_text(request, briefing_file)

    def version(self, timeout: float = 10.0) -> str | None:
        """The installed version (``CLI --version``), or ``None`` when it cannot be run."""
        try:
            command = self.executable()
        except PaoError:
            return None
        return cli_version(command, timeout)

    def known_versions(self) -> tuple[str, ...]:
        return self.versions

    def preseed_files(self) -> list[Path]:
        """The user's settings files the pre-seed edits (a profile lists its own)."""
        return []

    def state_files(self) -> list[tuple[str, str | None]]:
        """Each file the pre-seed edits, with why pao could not edit it (``None``: it can); for ``pao doctor``."""
        return [(str(path), settings_problem(path)) for path in self.preseed_files()]


def cli_version(command: Sequence[str], timeout: float = 10.0) -> str | None:
    """``COMMAND --version``'s version number; what it printed (its first line, cleaned and cut) when that holds no
    ``X.Y.Z`` and it exited 0 (a build pao cannot read: it still runs); ``None`` when it cannot be run."""
    try:
        done = subprocess.run([*command, "--version"], capture_output=True, text=True, timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired, UnicodeDecodeError):
        return None
    match = re.search(r"\b(\d+\.\d+\.\d+)\b", done.stdout)
    if match:
        return match.group(1)
    printed = "".join(ch if ch.isprintable() else " " for ch in (done.stdout.strip().splitlines() or [""])[0]).strip()
    return printed[:40] if done.returncode == 0 and printed else None


def read_settings(path: Path, parse: Callable[[str], Any] = json.loads) -> tuple[Any, str | None]:
    """A CLI's settings file parsed (``{}`` when it does not exist), or ``None`` and why it does not parse."""
    try:
        return parse(path.read_text(encoding="utf-8")), None
    except FileNotFoundError:
        return {}, None
    except ValueError as exc:  # UnicodeDecodeError and TOMLDecodeError are ValueErrors too
        return None, str(exc)


def settings_problem(path: Path) -> str | None:
    """Why pao could not edit a settings file (a JSON object, or TOML), or ``None``; a missing file is fine."""
    import tomllib  # only this path needs it: start-up stays light

    kind = "TOML" if path.suffix == ".toml" else "JSON"
    data, problem = read_settings(path, tomllib.loads if kind == "TOML" else json.loads)
    if problem is not None:
        return f"is not valid {kind} ({problem})"
    return None if isinstance(data, dict) else f"holds a JSON {type(data).__name__}, not an object"


def nudge_text(request: SpawnRequest, briefing_file: str) -> str:
    """One line asking the agent to take up the topic with its briefing (already in its context)."""
    topic = " ".join(request.topic.split())
    if request.agent_dir:  # the session channel: no file of the folder holds it
        return f"Your task: {topic}. pao's briefing for it is in your context; use it, then start."
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
    return parse_timestamp(meta.get(key))


def first_json_line(path: Path) -> dict[str, Any] | None:
    """The first line of a JSON-lines file as an object, or ``None`` (missing, empty, not JSON)."""
    try:
        with path.open(encoding="utf-8") as handle:
            line = handle.readline()
        value = json.loads(line)
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    return value if isinstance(value, dict) else None


SessionHeader = Callable[[dict[str, Any]], tuple[dt.datetime | None, Any]]
"""Reads a transcript's first line as (start time, session id); ``(None, None)`` for a transcript to pass over."""


def earliest_session(transcripts: Iterable[Path], since: dt.datetime, header: SessionHeader) -> str | None:
    """The id of the first session among ``transcripts`` that started at or after ``since`` (less the clock slack)."""
    floor = since - CLOCK_SLACK
    found = []
    for path in transcripts:
        started, session = header(first_json_line(path) or {})
        if started is not None and started >= floor and isinstance(session, str):
            found.append((started, session))
    return min(found)[1] if found else None
