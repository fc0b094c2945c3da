"""Codex CLI (``@openai/codex``) as a pao host agent, and its screens.

Codex reads ``AGENTS.md`` from the working directory into its first request (it has
no import syntax, so pao's block carries the briefing text). Trust and the
start-up checks live in ``$CODEX_HOME/config.toml`` (default ``~/.codex``), edited
with tomlkit under a lock, keeping every existing key and comment. Transcripts are
``sessions/YYYY/MM/DD/rollout-<time>-<uuid>.jsonl``, written once the first
message is submitted; their ``session_meta`` line carries the id and the cwd.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Literal, Mapping, Sequence

import attrs

from pao_agents.spec import hookimpl as agent_hookimpl
from pao_core.tables import ConfigTable
from pao_core.errors import PaoError
from pao_core.hookspecs import hookimpl
from pao_hosts import mcp as hosts_mcp
from pao_hosts import session_hooks
from pao_hosts.common import CliProfile, HostOptions, earliest_session, embedded_block, read_settings, session_started
from pao_hosts.screens import RuleDetector, ScreenRule

if TYPE_CHECKING:
    import datetime as dt

    from pao_core.config import PaoConfig
    from pao_agents.spec import McpServer, McpWiring
    from pao_agents.spec import AgentRecord, SpawnRequest

NAME = "codex"
KNOWN_VERSIONS: tuple[str, ...] = ("0.171.0",)
"""Versions whose screens and settings pao was measured against (goldens in plugins/pao_hosts/tests/data/screens/codex)."""
INSTALL_HINT = "install Codex CLI (npm install -g @openai/codex) or set PAO_CODEX_COMMAND"
UNATTENDED = ("--no-daemon", "--dangerously-bypass-approvals-and-sandbox")
ASKING = ("--no-daemon", "--ask-for-approval", "on-request")


@attrs.frozen
class CodexOptions(HostOptions):
    """``[hosts.codex]``: ``permission_mode`` "default" (Codex asks before leaving its sandbox) or "bypass"."""

    permission_mode: Literal["default", "bypass"] = "default"
"""No shared background server left running after exit; no approval prompts (pao's agents run unattended)."""

QUIET_DEFAULTS: Mapping[str, Any] = {"check_for_update_on_startup": False}
QUIET_TABLES: Mapping[str, Mapping[str, Any]] = {"analytics": {"enabled": False}}
"""Settings that keep Codex from calling public hosts at start-up; set only where the user chose nothing."""


def codex_home(environ: Mapping[str, str] | None = None) -> Path:
    env = os.environ if environ is None else environ
    return Path(env["CODEX_HOME"]) if env.get("CODEX_HOME") else Path.home() / ".codex"


@attrs.define
class CodexHost(CliProfile):
    """``pao_agents.spec.HostAgent`` for Codex CLI."""

    program = "codex"
    install_hint = INSTALL_HINT
    versions = KNOWN_VERSIONS

    options: CodexOptions = CodexOptions()
    budget_chars: int = 6000
    name: str = NAME
    context_file: str = "AGENTS.md"
    submit_key: str = "Enter"
    session_channel = "SessionStart hook (-c hooks)"
    event_channel = "hooks (-c hooks)"
    takes_first_prompt = True

    def command(self, request: SpawnRequest) -> list[str]:
        """pao's hooks (when the agent has a private folder), then the task as the first prompt."""
        command = self.launch(*request.mcp_args, *self.permission_args(), *self.hook_args(request.agent_dir))
        return [*command, request.prompt] if request.prompt else command

    def hook_args(self, agent_dir: str | None) -> list[str]:
        return session_hooks.codex_hook_args(agent_dir) if agent_dir else []

    def session_files(self, request: SpawnRequest) -> dict[str, str]:
        """The briefing as the output of the SessionStart hook (the hooks themselves are ``-c`` overrides)."""
        return session_hooks.session_start_file(request.private_folder())

    def permission_args(self) -> list[str]:
        """``bypass``: no approval prompt and no sandbox; ``default``: Codex asks before commands outside its sandbox."""
        return list(UNATTENDED if self.permission_mode() == "bypass" else ASKING)

    def mcp_wiring(self, servers: Sequence[McpServer], folder: Path, environ: Mapping[str, str]) -> McpWiring:
        """``-c mcp_servers.NAME.*`` overrides, no file."""
        return hosts_mcp.codex_wiring(servers, folder, environ)

    def context_block(self, briefing_file: str, briefing_markdown: str) -> str:
        return embedded_block(briefing_file, briefing_markdown, self.budget_chars)

    def project_risks(self, folder: str) -> list[str]:
        """What the ``.codex/`` layers from the project root down to ``folder`` would run."""
        from pao_hosts.project_files import codex_risks  # only spawn needs it: start-up stays light

        return codex_risks(folder)

    def preseed(self, folder: str) -> dict[str, Any]:
        """Trust ``folder`` in ``config.toml``; turn the update check and analytics off unless set.
        Returns the trust entry pao added (for ``unseed``): none when the folder had a trust level already."""
        from pao_core.files import ensure_dir  # only this path needs it: start-up stays light
        from pao_hosts.tomlfile import update_toml  # only this path needs it: start-up stays light

        home, real = ensure_dir(codex_home()), os.path.realpath(folder)
        added: list[bool] = []
        update_toml(home / "config.toml", lambda document: added.append(_preseed(document, real)))
        return {"file": str(home / "config.toml"), "folder": real} if any(added) else {}

    def unseed(self, folder: str, added: Mapping[str, Any]) -> None:
        """Remove the ``trust_level`` ``preseed`` added while it still says trusted (and its table, if left empty)."""
        from pao_hosts.tomlfile import update_toml  # only this path needs it: start-up stays light

        if added.get("file") and os.path.exists(added["file"]):
            update_toml(added["file"], lambda document: _unseed(document, str(added["folder"])))

    def preseed_files(self) -> list[Path]:
        return [codex_home() / "config.toml"]

    def consent_gaps(self, environ: Mapping[str, str] | None = None) -> list[str]:
        """What the user must set up once: a sign-in or a model provider whose key is in the environment."""
        import tomllib  # only this path needs it: start-up stays light

        env = os.environ if environ is None else environ
        home = codex_home(env)
        config, problem = read_settings(home / "config.toml", tomllib.loads)
        if problem is not None:
            return [f"{home / 'config.toml'} is not valid TOML ({problem}); fix or move it"]
        provider = config.get("model_provider")
        key = ((config.get("model_providers") or {}).get(provider) or {}).get("env_key") if provider else None
        if key and not env.get(key):
            return [f"Codex's model provider {provider!r} reads its key from {key}, which is not set"]
        if not provider and not (home / "auth.json").exists() and not env.get("OPENAI_API_KEY"):
            return ["Codex has no sign-in: run `codex login` once, or configure a model provider in config.toml"]
        return []

    def session_id(self, record: AgentRecord) -> str | None:
        """The id its SessionStart hook reported (hooked sessions), else the one in its transcript."""
        return session_hooks.started_session(record.extra.get("agent_dir")) or find_session(
            codex_home(), record.folder, record.created_at)

    def resume_command(self, record: AgentRecord, mcp_args: Sequence[str] = ()) -> list[str]:
        session = record.session_id or self.session_id(record)
        flags = [*mcp_args, *self.permission_args(), *self.hook_args(record.extra.get("agent_dir") if record.extra.get("events") else None)]
        return [*self.launch(*flags), "resume", *([session] if session else ["--last"])]


def _preseed(document: Any, folder: str) -> bool:
    """Trust ``folder`` unless it has a trust level already (the user's, or Codex's); true when pao added it."""
    import tomlkit  # only this path needs it: start-up stays light
    from tomlkit.container import OutOfOrderTableProxy  # only this path needs it: start-up stays light
    from tomlkit.items import InlineTable, Table  # only this path needs it: start-up stays light

    def table_in(parent: Any, key: str, **kwargs: Any) -> Any:
        if key not in parent:
            parent[key] = tomlkit.inline_table() if isinstance(parent, InlineTable) else tomlkit.table(**kwargs)
        child = parent[key]
        return child if isinstance(child, (Table, InlineTable, OutOfOrderTableProxy)) else None  # proxy: [projects.X] tables apart

    for key, value in QUIET_DEFAULTS.items():
        document.setdefault(key, value)
    for name, values in QUIET_TABLES.items():
        section = table_in(document, name)
        for key, value in values.items():
            if section is not None:
                section.setdefault(key, value)
    projects = table_in(document, "projects", is_super_table=True)
    project = table_in(projects, folder) if projects is not None else None
    if project is None:

        raise PaoError(f"{codex_home() / 'config.toml'}: projects must be a table to record that {folder} is trusted")
    if "trust_level" in project:
        return False
    project["trust_level"] = "trusted"
    return True


def _unseed(document: Any, folder: str) -> None:
    projects = document.get("projects")
    project = projects.get(folder) if hasattr(projects, "get") else None
    if not hasattr(project, "get") or project.get("trust_level") != "trusted":
        return
    del project["trust_level"]
    if not project:
        del projects[folder]


def _rollouts(home: Path) -> Iterator[Path]:
    sessions = home / "sessions"
    if sessions.is_dir():
        yield from sessions.glob("*/*/*/rollout-*.jsonl")


def find_session(home: Path, folder: str, since: dt.datetime) -> str | None:
    """The id of the first Codex session in ``folder`` that started at or after ``since``."""
    wanted = os.path.realpath(folder)

    def header(head: dict[str, Any]) -> tuple[dt.datetime | None, Any]:
        meta = head.get("payload") if head.get("type") == "session_meta" else None
        if not isinstance(meta, dict) or os.path.realpath(str(meta.get("cwd", ""))) != wanted:
            return None, None
        return session_started(meta, "timestamp"), meta.get("id") or meta.get("session_id")

    return earliest_session(_rollouts(home), since, header)


SCREEN = RuleDetector(
    name="codex-screen",
    hosts=(NAME,),
    rules=(
        ScreenRule(
            "waiting",
            [r"Trust this folder\?", r"1\. Trust and continue"],
            "Codex asks whether to trust the folder: answer it yourself, or `pao trust DIR` first (if pao pre-seeded it: is CODEX_HOME the same?)",
        ),
        ScreenRule(
            "blocked",
            [r"Choose how you want to use Codex", r"Sign in with ChatGPT"],
            "Codex wants a sign-in: configure a model provider with an API key in ~/.codex/config.toml, or run 'codex login'",
        ),
        ScreenRule("failed", [r"^\s*\S Reconnecting\.\.\..*(?:\n.*└.*)?"], "Codex retries a failed API request", quote=True),
        ScreenRule("waiting", [r"Would you like to [^\n]*\?(?:\n.*){0,4}\n\s*\$ .*"], "Codex asks for approval", quote=True),
        ScreenRule("busy", [r"^\s+loading\s*$"], "Codex is loading its session"),
        ScreenRule("busy", [r"esc to interrupt"], "Codex is working"),
        ScreenRule("failed", [r"^■ .*(?:\n(?!› |• ).*)*(?=\n› [^\n]*(?:\n(?!› |• ).*)*\Z)"],
                   "Codex's turn ended in an API error", quote=True),
        ScreenRule("ready", [r"^› ", r"\? for shortcuts"]),
    ),
)
"""Codex's screens: the trust and sign-in dialogs, loading and working, the composer."""


@hookimpl
def pao_config_tables() -> list[ConfigTable]:
    return [ConfigTable("hosts", NAME, CodexOptions, {"PAO_CODEX_COMMAND": "command"})]


@agent_hookimpl(trylast=True)  # a profile of the same name from another plugin comes first
def pao_host_agents(config: PaoConfig) -> list[CodexHost]:
    return [CodexHost(config.options("hosts", NAME, CodexOptions), config.briefing.budget_chars)]


@agent_hookimpl
def pao_readiness_detectors(config: PaoConfig) -> list[RuleDetector]:
    return [SCREEN]
