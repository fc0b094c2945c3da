"""Gemini CLI (``@google/gemini-cli``) as a pao host agent, and its screens.

Gemini reads ``GEMINI.md`` into its first user message and follows ``@./file.md``
imports in it, so pao's block is an import of the briefing file. Settings live in
``~/.gemini/settings.json`` and trust in ``~/.gemini/trustedFolders.json`` (under
``$GEMINI_CLI_HOME`` when set), both edited through the locked JSON edit. The
session id is chosen up front (``--session-id``); transcripts are
``tmp/<project>/chats/session-<time>-<id8>.jsonl``, the project folder named by
``tmp/<project>/.project_root``, written once the first message is submitted.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Literal, Mapping, Sequence

import attrs

from pao_agents.spec import hookimpl as agent_hookimpl
from pao_core.tables import ConfigTable
from pao_core.hookspecs import hookimpl
from pao_hosts import mcp as hosts_mcp
from pao_hosts.common import CliProfile, HostOptions, earliest_session, read_settings, session_started
from pao_hosts.screens import RuleDetector, ScreenRule

if TYPE_CHECKING:
    import datetime as dt

    from pao_core.config import PaoConfig
    from pao_agents.spec import McpServer, McpWiring
    from pao_agents.spec import AgentRecord, SpawnRequest

NAME = "gemini"
KNOWN_VERSIONS: tuple[str, ...] = ("0.61.0",)
"""Versions whose screens and settings pao was measured against (goldens in plugins/pao_hosts/tests/data/screens/gemini)."""
INSTALL_HINT = "install Gemini CLI (npm install -g @google/gemini-cli; node 20 or newer) or set PAO_GEMINI_COMMAND"
UNATTENDED = ("--yolo",)
"""Bypass: every tool call is accepted without asking."""
APPROVAL_FLAGS = {"default": (), "acceptEdits": ("--approval-mode", "auto_edit"), "bypass": UNATTENDED}


@attrs.frozen
class GeminiOptions(HostOptions):
    """``[hosts.gemini]``: ``permission_mode`` "default" (asks before tools), "acceptEdits" or "bypass"."""

    permission_mode: Literal["default", "acceptEdits", "bypass"] = "default"

QUIET_SETTINGS: Mapping[tuple[str, ...], Any] = {
    ("general", "enableAutoUpdate"): False,
    ("general", "enableAutoUpdateNotification"): False,
    ("privacy", "usageStatisticsEnabled"): False,
    ("security", "auth", "selectedType"): "gemini-api-key",
}
"""Settings that keep Gemini CLI off public hosts and out of the sign-in dialog; set only where the user chose nothing."""


def gemini_dir(environ: Mapping[str, str] | None = None) -> Path:
    env = os.environ if environ is None else environ
    return Path(env.get("GEMINI_CLI_HOME") or Path.home()) / ".gemini"


@attrs.define
class GeminiHost(CliProfile):
    """``pao_agents.spec.HostAgent`` for Gemini CLI."""

    program = "gemini"
    install_hint = INSTALL_HINT
    versions = KNOWN_VERSIONS

    options: GeminiOptions = GeminiOptions()
    name: str = NAME
    context_file: str = "GEMINI.md"
    submit_key: str = "Enter"
    chooses_session_id = True
    event_channel = "hooks (system-defaults file)"

    def events_silenced(self, folder: str) -> str | None:
        """Why Gemini CLI would skip the per-agent system-defaults file that carries pao's hooks (pao is not root,
        or ``PAO_HOME`` is not root's alone): then the screen tells the agent's state."""
        from pao_core.paths import home_path  # platformdirs: only spawn needs it

        return hosts_mcp.gemini_refusal(home_path() / "agents" / NAME / hosts_mcp.GEMINI_DEFAULTS)

    def session_files(self, request: SpawnRequest) -> dict[str, str]:
        """The per-agent system-defaults file with pao's hooks (and the machine's own defaults); the session's MCP
        servers, when wired, rewrite it with the same hooks (:func:`pao_hosts.mcp.gemini_wiring`)."""
        agent_dir = request.private_folder()
        from pao_hosts.session_hooks import gemini_hooks  # only spawn needs it

        return {hosts_mcp.GEMINI_DEFAULTS: hosts_mcp.gemini_defaults((), os.environ, gemini_hooks(agent_dir))}

    def environment(self, request: SpawnRequest) -> Mapping[str, str | None]:
        """Also ``GEMINI_CLI_SYSTEM_DEFAULTS_PATH``: the agent's own defaults file with its hooks, once written."""
        defaults = Path(request.agent_dir or "", hosts_mcp.GEMINI_DEFAULTS)
        own = {"GEMINI_CLI_SYSTEM_DEFAULTS_PATH": str(defaults)} if request.agent_dir and defaults.is_file() else {}
        return {**super().environment(request), **own}

    def command(self, request: SpawnRequest) -> list[str]:
        """Start under the session id pao chose (``request.session_id``), when it chose one."""
        session = ["--session-id", request.session_id] if request.session_id else []
        return self.launch(*APPROVAL_FLAGS[self.permission_mode()], *session)

    def mcp_wiring(self, servers: Sequence[McpServer], folder: Path, environ: Mapping[str, str]) -> McpWiring:
        """A per-agent system-defaults file (``GEMINI_CLI_SYSTEM_DEFAULTS_PATH``) with the servers."""
        return hosts_mcp.gemini_wiring(servers, folder, environ)

    def context_block(self, briefing_file: str, briefing_markdown: str) -> str:
        return f"@./{os.path.basename(briefing_file)}"

    def project_risks(self, folder: str) -> list[str]:
        """What ``folder``'s ``.gemini/`` settings, extensions and ``.env`` files would run or set."""
        from pao_hosts.project_files import gemini_risks  # only spawn needs it: start-up stays light

        return gemini_risks(folder)

    def preseed(self, folder: str) -> dict[str, Any]:
        """Trust ``folder``; choose API-key sign-in and turn update checks and statistics off unless set.
        Returns the trust entry pao added (for ``unseed``): none when the folder had an entry already."""
        from pao_core.files import ensure_dir  # only this path needs it: start-up stays light
        from pao_agents.spec import update_json  # only this path needs it: start-up stays light

        home, real = ensure_dir(gemini_dir()), os.path.realpath(folder)
        update_json(home / "settings.json", _quiet)
        added: list[str] = []

        def trust(trusted: dict[str, Any]) -> None:
            if real not in trusted:
                trusted[real] = "TRUST_FOLDER"
                added.append(real)

        update_json(home / "trustedFolders.json", trust)
        return {"file": str(home / "trustedFolders.json"), "folder": real} if added else {}

    def unseed(self, folder: str, added: Mapping[str, Any]) -> None:
        """Remove the entry ``preseed`` added while it still says ``TRUST_FOLDER``."""
        from pao_agents.spec import update_json  # only this path needs it: start-up stays light

        def forget(trusted: dict[str, Any]) -> None:
            if trusted.get(str(added["folder"])) == "TRUST_FOLDER":
                del trusted[str(added["folder"])]

        if added.get("file") and os.path.exists(added["file"]):
            update_json(added["file"], forget)

    def preseed_files(self) -> list[Path]:
        return [gemini_dir() / "settings.json", gemini_dir() / "trustedFolders.json"]

    def consent_gaps(self, environ: Mapping[str, str] | None = None) -> list[str]:
        """What the user must set up once: an API key for API-key sign-in (pao's default choice)."""
        env = os.environ if environ is None else environ
        settings_file = gemini_dir(env) / "settings.json"
        settings, problem = read_settings(settings_file)
        if problem is not None:
            return [f"{settings_file} is not plain JSON; pao cannot pre-seed it (remove comments, or fix it)"]
        chosen = ((settings.get("security") or {}).get("auth") or {}).get("selectedType", "gemini-api-key")
        if chosen == "gemini-api-key" and not env.get("GEMINI_API_KEY"):
            return ["Gemini CLI signs in with an API key here, and GEMINI_API_KEY is not set"]
        return []

    def session_id(self, record: AgentRecord) -> str | None:
        return record.session_id or find_session(gemini_dir(), record.folder, record.created_at)

    def resume_command(self, record: AgentRecord, mcp_args: Sequence[str] = ()) -> list[str]:
        session = record.session_id or self.session_id(record) or "latest"
        return [*self.launch(*mcp_args, *APPROVAL_FLAGS[self.permission_mode()]), "--resume", session]


def _quiet(settings: dict[str, Any]) -> None:
    for (*sections, key), value in QUIET_SETTINGS.items():
        table: Any = settings
        for section in sections:
            table = table.setdefault(section, {}) if isinstance(table, dict) else None
        if isinstance(table, dict):
            table.setdefault(key, value)


def _transcripts(home: Path, folder: str) -> Iterator[Path]:
    for root_file in home.glob("tmp/*/.project_root"):
        try:
            root = root_file.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError):
            continue
        if os.path.realpath(root) == folder:
            yield from root_file.parent.glob("chats/session-*.jsonl")


def find_session(home: Path, folder: str, since: dt.datetime) -> str | None:
    """The id of the first Gemini session in ``folder`` that started at or after ``since``."""

    def header(head: dict[str, Any]) -> tuple[dt.datetime | None, Any]:
        if head.get("kind", "main") != "main":  # a sub-agent's transcript
            return None, None
        return session_started(head, "startTime"), head.get("sessionId")

    return earliest_session(_transcripts(home, os.path.realpath(folder)), since, header)


SCREEN = RuleDetector(
    name="gemini-screen",
    hosts=(NAME,),
    rules=(
        ScreenRule(
            "waiting",
            [r"Do you trust the files in this folder\?"],
            "Gemini CLI asks whether to trust the folder: answer it yourself, or `pao trust DIR` first (if pao pre-seeded it: is GEMINI_CLI_HOME the same?)",
        ),
        ScreenRule(
            "blocked",
            [r"How would you like to authenticate"],
            "Gemini CLI asks how to sign in: set security.auth.selectedType in ~/.gemini/settings.json",
        ),
        ScreenRule(
            "blocked",
            [r"Enter Gemini API Key"],
            "Gemini CLI asks for an API key: set GEMINI_API_KEY in the environment pao runs in",
        ),
        ScreenRule("waiting", [r"Allow execution of [^\n]*\?"], "Gemini CLI asks permission", quote=True),
        ScreenRule("busy", [r"esc to cancel"], "Gemini CLI is working"),
        ScreenRule("failed", [r"^✕ .*API Error.*(?:\n  \S.*)?(?=(?:\n(?! > |✦ ).*)*\n >\s+Type your message)"],
                   "Gemini CLI's turn ended in an API error", quote=True),
        ScreenRule("ready", [r"^\s*[>*!]\s+Type your message or @path/to/file", r"\b\d+ GEMINI\.md files?\b"]),
        ScreenRule("busy", [r"^\s*[>*!]\s+Type your message or @path/to/file"], "Gemini CLI is loading its context files"),
    ),
)
"""Gemini CLI's screens: trust, sign-in and key dialogs, working, and the prompt once context is loaded."""


@hookimpl
def pao_config_tables() -> list[ConfigTable]:
    return [ConfigTable("hosts", NAME, GeminiOptions, {"PAO_GEMINI_COMMAND": "command"})]


@agent_hookimpl(trylast=True)  # a profile of the same name from another plugin comes first
def pao_host_agents(config: PaoConfig) -> list[GeminiHost]:
    return [GeminiHost(config.options("hosts", NAME, GeminiOptions))]


@agent_hookimpl
def pao_readiness_detectors(config: PaoConfig) -> list[RuleDetector]:
    return [SCREEN]
