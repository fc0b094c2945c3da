"""The Claude Code host profile, a default plugin of pao-core.

Options live in ``[hosts.claude-code]`` (``PAO_CLAUDE_COMMAND`` overrides ``command``)::

    [hosts.claude-code]
    command = "claude"                       # parsed like a shell would split it; no shell runs
    permission_mode = "bypassPermissions"    # or "auto", "acceptEdits", "default", "plan"
    args = []                                # more arguments for every start
    mcp_approval = "folder"                  # "folder", "all" or "none"
    env = {}                                 # extra environment for the agent

See ``docs/claude-code.md`` for the risks of each permission mode.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Literal, Mapping

import attrs

from pao_core.config import ConfigTable
from pao_core.hookspecs import hookimpl
from pao_core.hosts import claude_trust
from pao_core.hosts.claude_screens import ClaudeCodeScreens
from pao_core.hosts.common import CliProfile, HostOptions

if TYPE_CHECKING:
    from pao_core.config import PaoConfig
    from pao_core.models import AgentRecord, SpawnRequest

PermissionMode = Literal["bypassPermissions", "auto", "acceptEdits", "default", "plan"]

KNOWN_VERSIONS: tuple[str, ...] = ("2.0.77", "2.1.197", "2.1.332")
"""Versions whose screens and pre-seed facts pao was measured against (goldens in tests/data/screens)."""

_SESSION_ID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


@attrs.frozen
class ClaudeCodeOptions(HostOptions):
    """The ``[hosts.claude-code]`` table: the common ``command``, ``args`` and ``env``, and Claude Code's own."""

    permission_mode: PermissionMode = "bypassPermissions"
    mcp_approval: claude_trust.McpApproval = "folder"


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

    # -- starting ------------------------------------------------------------------

    def permission_args(self) -> list[str]:
        if self.options.permission_mode == "bypassPermissions":
            return ["--dangerously-skip-permissions"]
        return ["--permission-mode", self.options.permission_mode]

    def command(self, request: SpawnRequest) -> list[str]:
        return self.launch(*self.permission_args())

    def resume_command(self, record: AgentRecord) -> list[str]:
        """``claude --resume <session id>`` with the same flags; ``--continue`` (newest in the folder) if unknown."""
        session = record.session_id or self.session_id(record)
        resume = ["--resume", session] if session else ["--continue"]
        return self.launch(*resume, *self.permission_args())

    # -- briefing delivery -----------------------------------------------------------

    def context_block(self, briefing_file: str, briefing_markdown: str) -> str:
        """The CLAUDE.md line that imports the briefing (Claude Code expands ``@file`` imports)."""
        return f"@{briefing_file}\n"

    def nudge(self, request: SpawnRequest, briefing_file: str) -> str:
        topic = " ".join(request.topic.split())
        return f"Your task: {topic}. Read {briefing_file} first (what pao gathered for it), then start."

    # -- trust (step 5) ----------------------------------------------------------------

    def preseed(self, folder: str) -> None:
        """Trust ``folder``, accept the bypass warning when in bypass mode, approve its MCP servers."""
        bypass = self.options.permission_mode == "bypassPermissions"
        claude_trust.trust_folder(folder, home=self.home, bypass=bypass)
        if bypass:
            claude_trust.accept_bypass_warning(home=self.home)
        claude_trust.approve_mcp_servers(folder, self.options.mcp_approval)

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
        footer = "bypass permissions on" if self.options.permission_mode == "bypassPermissions" else ""
        return ClaudeCodeScreens(footer=footer)


def profile(config: PaoConfig) -> ClaudeCode:
    return ClaudeCode(config.options("hosts", "claude-code", ClaudeCodeOptions))


@hookimpl
def pao_config_tables() -> list[ConfigTable]:
    return [ConfigTable("hosts", "claude-code", ClaudeCodeOptions, {"PAO_CLAUDE_COMMAND": "command"})]


@hookimpl
def pao_host_agents(config: PaoConfig) -> Iterable[ClaudeCode]:
    return [profile(config)]


@hookimpl
def pao_readiness_detectors(config: PaoConfig) -> Iterable[ClaudeCodeScreens]:
    return [profile(config).detector()]
