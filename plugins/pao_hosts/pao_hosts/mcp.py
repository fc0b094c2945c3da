"""A session's MCP servers (``pao_session_mcp_servers``) in each host CLI's own terms.

Nothing here writes the user's settings: Claude Code gets a per-agent ``--mcp-config``
file, Codex ``-c mcp_servers.NAME.*`` overrides, Gemini CLI a per-agent system-defaults
file (the lowest-ranked settings scope; its ``mcpServers`` merge with the user's), which also carries the
session's hooks (:func:`pao_hosts.session_hooks.gemini_hooks`).
Only ``McpServer.env`` (values safe to show) reaches them; a server's secrets are in
its own ``files``.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any, Mapping, Sequence

from pao_agents.spec import McpServer, McpWiring

CLAUDE_CONFIG = "mcp.json"
GEMINI_DEFAULTS = "gemini-system-defaults.json"


def claude_config(servers: Sequence[McpServer], environ: Mapping[str, str]) -> str:
    """The ``--mcp-config`` file: ``{"mcpServers": {name: {type, command, args, env}}}``."""
    entries = {
        server.name: {"type": "stdio", "command": server.command, "args": list(server.args), "env": dict(server.env)}
        for server in servers
    }
    return json.dumps({"mcpServers": entries}, indent=2) + "\n"


def claude_args(config_file: str, servers: Sequence[McpServer]) -> list[str]:
    """``--mcp-config FILE --allowedTools mcp__S__T,...``: both options take several values,
    so the caller puts another option after them (never the first prompt)."""
    tools = [f"mcp__{server.name}__{tool}" for server in servers for tool in server.tools]
    return ["--mcp-config", config_file, *(["--allowedTools", ",".join(tools)] if tools else [])]


def codex_overrides(servers: Sequence[McpServer]) -> list[str]:
    """``-c mcp_servers.NAME.command=...`` (and ``args``, ``env``) as TOML values."""
    import tomlkit  # only when a Codex session gets MCP servers

    def toml(value: Any) -> str:
        return tomlkit.item(value).as_string()

    args: list[str] = []
    for server in servers:
        key = f"mcp_servers.{server.name}"
        values: dict[str, Any] = {"command": server.command, "args": list(server.args)}
        if server.env:
            values["env"] = tomlkit.inline_table()
            values["env"].update(server.env)
        for name, value in values.items():
            args += ["-c", f"{key}.{name}={toml(value)}"]
    return args


def gemini_system_defaults_path(environ: Mapping[str, str]) -> Path:
    """Where Gemini CLI reads its system defaults when pao does not point it elsewhere."""
    if environ.get("GEMINI_CLI_SYSTEM_DEFAULTS_PATH"):
        return Path(environ["GEMINI_CLI_SYSTEM_DEFAULTS_PATH"])
    settings = environ.get("GEMINI_CLI_SYSTEM_SETTINGS_PATH") or (
        "/Library/Application Support/GeminiCli/settings.json" if sys.platform == "darwin" else "/etc/gemini-cli/settings.json"
    )
    return Path(settings).parent / "system-defaults.json"


def gemini_defaults(servers: Sequence[McpServer], environ: Mapping[str, str],
                    hooks: Mapping[str, list[Any]] | None = None) -> str:
    """The per-agent system-defaults file: the machine's own (when it has one) plus the servers, trusted, and
    pao's ``hooks`` after the machine's own for each event."""
    base: dict[str, Any] = {}
    try:
        loaded = json.loads(gemini_system_defaults_path(environ).read_text(encoding="utf-8"))
        base = loaded if isinstance(loaded, dict) else {}
    except (OSError, ValueError):  # none, or one Gemini could not read either
        pass
    servers_json = dict(base.get("mcpServers") or {})
    for server in servers:
        servers_json[server.name] = {"command": server.command, "args": list(server.args), "env": dict(server.env),
                                     "trust": True}
    merged = {**base, "mcpServers": servers_json}
    if hooks:
        own = base.get("hooks") if isinstance(base.get("hooks"), dict) else {}
        merged["hooks"] = {**own, **{event: [*(own.get(event) if isinstance(own.get(event), list) else []), *added]
                                     for event, added in hooks.items()}}
    return json.dumps(merged, indent=2) + "\n"


def claude_wiring(servers: Sequence[McpServer], folder: Path, environ: Mapping[str, str]) -> McpWiring:
    return McpWiring(tuple(claude_args(str(folder / CLAUDE_CONFIG), servers)), {CLAUDE_CONFIG: claude_config(servers, environ)})


def codex_wiring(servers: Sequence[McpServer], folder: Path, environ: Mapping[str, str]) -> McpWiring:
    # required: Codex waits for the servers before the first turn (else the first prompt runs without their tools);
    # approve: their tools run without an approval prompt in every approval mode
    extra = [arg for server in servers for setting in ("required=true", 'default_tools_approval_mode="approve"')
             for arg in ("-c", f"mcp_servers.{server.name}.{setting}")]
    return McpWiring((*codex_overrides(servers), *extra))


def gemini_refusal(path: Path) -> str | None:
    """Why Gemini CLI would skip ``path`` as a system-defaults file (its own rule since 0.61: the file and every
    folder above it owned by root, none writable by group or others), or ``None``: it reads it."""
    if os.name != "posix":
        return None
    if os.geteuid() != 0:
        return "Gemini CLI reads a system settings file only when root owns it, and pao runs as you"
    for place in [path.parent, *path.parent.parents]:
        try:
            info = os.stat(place)
        except FileNotFoundError:
            continue  # made by pao, as root
        if info.st_uid != 0 or info.st_mode & 0o022:
            return (f"{place} is not root's alone (Gemini CLI wants every folder above the file owned by root, "
                    "not group- or world-writable)")
    return None


def gemini_wiring(servers: Sequence[McpServer], folder: Path, environ: Mapping[str, str]) -> McpWiring:
    """The per-agent system-defaults file; none when Gemini CLI would skip it (then pao says so, once, and the
    record lists no servers): a user who is not root registers ``pao mcp`` once in ``~/.gemini/settings.json``."""
    path = folder / GEMINI_DEFAULTS
    refused = gemini_refusal(path)
    if refused:
        print(f"pao: this Gemini CLI session has no pao MCP tools: {refused}; register pao mcp in "
              "~/.gemini/settings.json once instead (docs/mcp.md)", file=sys.stderr)
        return McpWiring()
    from pao_hosts.session_hooks import gemini_hooks  # the same file carries the session's hooks

    files = {GEMINI_DEFAULTS: gemini_defaults(servers, environ, gemini_hooks(str(folder)))}
    return McpWiring(files=files, env={"GEMINI_CLI_SYSTEM_DEFAULTS_PATH": str(path)})
