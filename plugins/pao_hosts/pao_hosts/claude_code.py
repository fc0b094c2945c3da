"""The Claude Code host profile, a default plugin of pao-core.

Options live in ``[hosts.claude-code]`` (``PAO_CLAUDE_COMMAND`` overrides ``command``)::

    [hosts.claude-code]
    command = "claude"                       # parsed like a shell would split it; no shell runs
    permission_mode = "default"              # asks before commands; or "acceptEdits", "plan", "auto", "bypass"
    args = []                                # more arguments for every start
    mcp_approval = "none"                    # approve the folder's .mcp.json servers: "folder", "all" or "none"
    env = {}                                 # extra environment for the agent

See ``docs/claude-code.md`` for the risks of each permission mode.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import stat
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Literal, Mapping, Sequence

import attrs

from pao_agents.spec import BRIEFING, EVENTS, event_hook_command, quoted
from pao_agents.spec import hookimpl as agent_hookimpl
from pao_core.errors import PaoError
from pao_core.tables import ConfigTable
from pao_core.hookspecs import hookimpl
from pao_hosts import mcp as hosts_mcp
from pao_hosts import claude_trust
from pao_hosts.claude_screens import ClaudeCodeScreens
from pao_hosts.common import CliProfile, HostOptions, cli_version, read_settings

if TYPE_CHECKING:
    from pao_core.config import PaoConfig
    from pao_agents.spec import McpServer, McpWiring
    from pao_agents.spec import AgentRecord, SpawnRequest

PermissionMode = Literal["default", "acceptEdits", "plan", "auto", "bypass", "bypassPermissions"]
FOOTERS = {"default": "? for shortcuts", "bypass": "bypass permissions on"}
"""The mode line the ready screen shows (measured on 2.0.77 and 2.1.332); other modes accept any."""

KNOWN_VERSIONS: tuple[str, ...] = ("2.0.77", "2.1.197", "2.1.332")
"""Versions whose screens and pre-seed facts pao was measured against (goldens in plugins/pao_hosts/tests/data/screens)."""

SETTINGS = "claude-settings.json"
SETTINGS_LIMIT = 1024 * 1024
"""A settings file larger than this is not read for ``disableAllHooks``."""
HOOK_EVENTS = ("SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "PermissionRequest", "Stop", "Notification",
               "SessionEnd")
"""The events whose hooks append to the agent's event log (docs/lifecycle.md#states: what each one means)."""
STOP_FAILURE_SINCE = (2, 1, 78)
"""The first version with a StopFailure event (an API error ended the turn): its changelog, and the npm packages
(2.1.78's cli.js names it, 2.1.77's does not). Older ones (2.0.77) refuse a settings file naming it, every hook with
it: the event is added only where the installed CLI is this or newer (a newer, unknown one gets it too)."""

PIPED_BRIEFING = ((2, 0, 77), (2, 1, 332))
"""The versions measured reading ``--append-system-prompt-file`` from a FIFO, waiting for its writer (2.1.332 opens it
~0.2 s after its start, 2.0.77 ~1.2 s): between these, pao starts the CLI before the briefing is composed."""
VERSION_PROBE_TIMEOUT = 5.0
"""Seconds ``CLI --version`` may take, asked only when neither its package nor its path says its version."""
LAST_TO_WAIT_FOR_MCP = (2, 0, 77)
"""The newest version measured that waits for its ``--mcp-config`` servers before its first request in a terminal."""

_SESSION_ID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


@attrs.frozen
class ClaudeCodeOptions(HostOptions):
    """The ``[hosts.claude-code]`` table: the common ``command``, ``args`` and ``env``, and Claude Code's own."""

    permission_mode: PermissionMode = "default"
    mcp_approval: claude_trust.McpApproval = "none"


def path_key(folder: str) -> str:
    """The folder's name under ``~/.claude/projects/``: every non-alphanumeric character becomes ``-``."""
    return re.sub(r"[^A-Za-z0-9]", "-", folder)


@attrs.frozen
class ClaudeCode(CliProfile):
    """Claude Code as pao starts it: command line, context import, trust, nudge, transcripts."""

    program = "claude"
    install_hint = "install Claude Code (npm install -g @anthropic-ai/claude-code) or set PAO_CLAUDE_COMMAND"
    versions = KNOWN_VERSIONS

    options: ClaudeCodeOptions = ClaudeCodeOptions()
    home: Path | None = None  # the user's HOME (tests point it elsewhere); None: the process's
    name: str = "claude-code"
    context_file: str = "CLAUDE.md"
    submit_key: str = "Enter"
    session_channel = "--append-system-prompt-file"
    event_channel = "hooks (--settings)"
    chooses_session_id = True
    takes_first_prompt = True
    @property
    def holds_first_prompt_for_mcp(self) -> bool:  # type: ignore[override]
        """With pao's MCP server wired the task is typed once the CLI has its tools (pao_agents.mcpwait): 2.1.332 in a
        terminal sends its first request without waiting for its MCP servers. 2.0.77 and older wait for them with the
        task on their command line (measured: tools in the first request ~2.7 s after launch, typed ~4.2 s)."""
        try:
            version = installed_version(self.executable())
        except PaoError:  # no CLI to read: the spawn says so; holding is the safe default
            return True
        return version is None or version > LAST_TO_WAIT_FOR_MCP

    @property
    def pipes_briefing(self) -> bool:  # type: ignore[override]
        """A version measured reading its briefing file from a pipe (:data:`PIPED_BRIEFING`); others get a plain file."""
        try:
            version = package_version(self.executable()[0])
        except PaoError:
            return False
        return version is not None and PIPED_BRIEFING[0] <= version <= PIPED_BRIEFING[1]

    # -- starting ------------------------------------------------------------------

    def permission_args(self) -> list[str]:
        mode = self.permission_mode()
        return ["--dangerously-skip-permissions"] if mode == "bypass" else ["--permission-mode", mode]

    def command(self, request: SpawnRequest) -> list[str]:
        """The CLI with pao's flags: session id, per-session settings and briefing, then the first prompt."""
        session = ["--session-id", request.session_id] if request.session_id else []
        command = self.launch(*request.mcp_args, *self.permission_args(), *session, *self.channel_args(request.agent_dir))
        return [*command, request.prompt] if request.prompt else command

    def channel_args(self, agent_dir: str | None) -> list[str]:
        """The agent's hooks (``--settings``) and briefing (``--append-system-prompt-file``), when it has a private folder."""
        if not agent_dir:
            return []
        return ["--settings", os.path.join(agent_dir, SETTINGS), "--append-system-prompt-file", os.path.join(agent_dir, BRIEFING)]

    def mcp_wiring(self, servers: Sequence[McpServer], folder: Path, environ: Mapping[str, str]) -> McpWiring:
        """``--mcp-config`` (a per-agent file) and ``--allowedTools`` for the servers' tools."""
        return hosts_mcp.claude_wiring(servers, folder, environ)

    def session_files(self, request: SpawnRequest) -> dict[str, str]:
        """``--settings`` for one session: each hook event appended to the agent's ``events.jsonl`` by one ``sh``
        (which records and notifies a change of state: ``pao_agents.eventhook``)."""
        log = Path(request.private_folder(), EVENTS)
        hooks = {event: {"type": "command", "command": event_hook_command(log, event), "timeout": 10}
                 for event in self.hook_events()}
        settings = {"hooks": {event: [{"hooks": [hook]}] for event, hook in hooks.items()}}
        return {SETTINGS: json.dumps(settings, indent=2) + "\n"}

    def hook_events(self) -> tuple[str, ...]:
        """:data:`HOOK_EVENTS`, and StopFailure when the installed CLI knows it (:func:`installed_version`). A version
        pao cannot tell gets the events every version takes (one line says so): a settings file naming an event its
        CLI does not know loses every hook, where without StopFailure only a failed turn waits for its screen."""
        command = self.executable()
        version = installed_version(command)
        if version is None and shutil.which(command[0]):  # it is there but says no version (a missing one: spawn says)
            print(f"pao: cannot tell which Claude Code version {quoted(command[0])} is; its hooks leave out StopFailure "
                  "(a failed turn shows on its screen, not as an event)", file=sys.stderr)
        return (*HOOK_EVENTS, "StopFailure") if version is not None and version >= STOP_FAILURE_SINCE else HOOK_EVENTS

    def events_silenced(self, folder: str) -> str | None:
        """The settings file that sets ``disableAllHooks: true`` (the folder's project settings, then the user's):
        Claude Code then runs no hook at all, pao's included, and the screen tells pao the agent's state."""
        places = [Path(folder, ".claude", name) for name in ("settings.local.json", "settings.json")]
        for path in [*places, claude_trust.claude_settings_path(self.home)]:
            try:  # a regular file of a sane size only: the folder's may be a FIFO, a device or huge
                info = path.stat()
            except OSError:
                continue
            if stat.S_ISREG(info.st_mode) and info.st_size <= SETTINGS_LIMIT:
                settings, _ = read_settings(path)
                if isinstance(settings, dict) and settings.get("disableAllHooks") is True:
                    return f"{path} sets disableAllHooks"
        return None

    def resume_command(self, record: AgentRecord, mcp_args: Sequence[str] = ()) -> list[str]:
        """``claude --resume <session id>`` with the same flags; ``--continue`` (newest in the folder) if unknown."""
        session = record.session_id or self.session_id(record)
        resume = ["--resume", session] if session else ["--continue"]
        return self.launch(*mcp_args, *resume, *self.permission_args(), *self.channel_args(record.extra.get("agent_dir")))

    # -- briefing delivery -----------------------------------------------------------

    def context_block(self, briefing_file: str, briefing_markdown: str) -> str:
        """The CLAUDE.md line that imports the briefing (Claude Code expands ``@file`` imports)."""
        return f"@{briefing_file}\n"

    def nudge(self, request: SpawnRequest, briefing_file: str) -> str:
        topic = " ".join(request.topic.split())
        if request.agent_dir:
            return f"Your task: {topic}. pao's briefing for it is in your system prompt; use it, then start."
        return f"Your task: {topic}. Read {briefing_file} first (what pao gathered for it), then start."

    # -- trust (step 5) ----------------------------------------------------------------

    def project_risks(self, folder: str) -> list[str]:
        """What the folder's ``.claude/settings*.json`` and the ``.mcp.json`` files above it would run."""
        from pao_hosts.project_files import claude_risks  # only spawn needs it: start-up stays light

        return claude_risks(folder, home=self.home)

    def preseed(self, folder: str) -> dict[str, Any]:
        """Trust ``folder``; only in bypass mode (the user's choice) accept the CLI's bypass warning;
        approve the folder's MCP servers only as ``mcp_approval`` says (default: not at all).
        Returns the trust keys pao added to ``~/.claude.json`` (for ``unseed``)."""
        bypass = self.permission_mode() == "bypass"
        added = claude_trust.trust_folder(folder, home=self.home, bypass=bypass)
        if bypass:
            claude_trust.accept_bypass_warning(home=self.home)
        claude_trust.approve_mcp_servers(folder, self.options.mcp_approval)
        return added

    def unseed(self, folder: str, added: Mapping[str, Any]) -> None:
        """Remove the trust keys ``preseed`` added, where they are still as pao wrote them."""
        if added.get("keys"):
            claude_trust.untrust_folder(dict(added))

    def preseed_files(self) -> list[Path]:
        return [claude_trust.claude_config_path(self.home), claude_trust.claude_settings_path(self.home)]

    def consent_gaps(self, environ: Mapping[str, str] | None = None) -> list[str]:
        """What the user must do once before pao can start Claude Code (onboarding, key approval)."""
        env = os.environ if environ is None else environ
        return claude_trust.onboarding_gaps(env.get("ANTHROPIC_API_KEY"), home=self.home)

    # -- transcripts -------------------------------------------------------------------

    def projects_dir(self) -> Path:
        return claude_trust.claude_dir(self.home) / "projects"

    def session_id(self, record: AgentRecord) -> str | None:
        """The newest transcript of the agent's folder written since the agent started, or ``None``."""
        folder = self.projects_dir() / path_key(record.folder)
        since = record.created_at.timestamp() - 1.0  # file times and the record's clock may differ a little
        newest: tuple[float, str] | None = None
        try:
            entries = list(os.scandir(folder))
        except (FileNotFoundError, NotADirectoryError):
            return None
        for entry in entries:
            stem, dot, ext = entry.name.rpartition(".")
            if ext != "jsonl" or not dot or not _SESSION_ID.match(stem):
                continue
            try:
                mtime = entry.stat().st_mtime
            except FileNotFoundError:
                continue
            if mtime >= since and (newest is None or mtime > newest[0]):
                newest = (mtime, stem)
        return newest[1] if newest else None

    # -- doctor --------------------------------------------------------------------------

    def detector(self) -> ClaudeCodeScreens:
        return ClaudeCodeScreens(footer=FOOTERS.get(self.permission_mode(), ""))


def profile(config: PaoConfig) -> ClaudeCode:
    return ClaudeCode(config.options("hosts", "claude-code", ClaudeCodeOptions))


@hookimpl
def pao_config_tables() -> list[ConfigTable]:
    return [ConfigTable("hosts", "claude-code", ClaudeCodeOptions, {"PAO_CLAUDE_COMMAND": "command"})]


@agent_hookimpl(trylast=True)  # a profile of the same name from another plugin comes first
def pao_host_agents(config: PaoConfig) -> Iterable[ClaudeCode]:
    return [profile(config)]


@agent_hookimpl
def pao_readiness_detectors(config: PaoConfig) -> Iterable[ClaudeCodeScreens]:
    return [profile(config).detector()]


@functools.lru_cache(maxsize=8)
def _version_of(command: tuple[str, ...], program: str, modified: float) -> tuple[int, ...] | None:
    found = package_version(program) or version_in_path(program)
    if found is None:
        printed = re.fullmatch(r"(\d+)\.(\d+)\.(\d+)", cli_version(command, timeout=VERSION_PROBE_TIMEOUT) or "")
        found = tuple(map(int, printed.groups())) if printed else None
    return found


def installed_version(command: Sequence[str]) -> tuple[int, ...] | None:
    """The version of the Claude Code ``command`` runs: its npm package's ``package.json`` (:func:`package_version`),
    else a version-named file or folder it resolves to (the native installer's ``versions/2.1.332``), else what
    ``--version`` prints (a wrapper script); ``None`` when none of them says."""
    program = shutil.which(command[0]) or command[0]
    try:
        modified = os.stat(program).st_mtime  # an upgrade in place is read again
    except OSError:
        return None
    return _version_of(tuple(command), program, modified)


def version_in_path(program: str) -> tuple[int, ...] | None:
    """``X.Y.Z`` as the name of the file ``program`` resolves to, or of its folder, or ``None``."""
    resolved = Path(program).resolve()
    for name in (resolved.name, resolved.parent.name):
        match = re.fullmatch(r"(\d+)\.(\d+)\.(\d+)", name)
        if match:
            return tuple(map(int, match.groups()))
    return None


def package_version(program: str) -> tuple[int, ...] | None:
    """The version of the ``@anthropic-ai/claude-code`` package ``program`` runs from (its ``package.json``, up to
    three folders above the resolved program), or ``None`` when it is not such a package."""
    folder = Path(shutil.which(program) or program).resolve().parent
    for candidate in (folder, *list(folder.parents)[:3]):
        settings, _ = read_settings(candidate / "package.json")
        if isinstance(settings, dict) and settings.get("name") == "@anthropic-ai/claude-code":
            match = re.match(r"(\d+)\.(\d+)\.(\d+)", str(settings.get("version")))
            return tuple(map(int, match.groups())) if match else None
    return None
