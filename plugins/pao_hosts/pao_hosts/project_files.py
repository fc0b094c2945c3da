"""What a folder's own project settings would make a CLI run once the CLI trusts the folder.

pao pre-seeds a CLI's folder trust by itself only when these readers find nothing
(``pao_agents.trust`` decides). Each reader returns one line per finding: the file,
the key and what it runs, quoted and cut, e.g. ``.claude/settings.json: hooks.SessionStart
runs 'curl ...'``. Keys are judged by allowlist: a key pao does not know to be inert
counts as one that may run something, and so does a file pao cannot read as the CLI would.

Which files each CLI loads (the facts these follow):

- Claude Code: ``.claude/settings.json`` and ``.claude/settings.local.json`` of the folder,
  and ``.mcp.json`` of the folder and every folder above it (the user's own home excepted:
  ``~/.claude`` is the user's settings, not a project's).
- Codex (0.171): ``.codex/config.toml``, ``.codex/hooks.json`` and ``.codex/rules/`` of each
  folder from the project root (the nearest folder above holding ``.git``) down to the folder.
- Gemini CLI: ``.gemini/settings.json``, ``.gemini/extensions/``, and the ``.env`` files it
  loads into its environment (``.gemini/.env``, ``.env``) of the folder.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from pao_core.errors import shown
from pao_core.files import NotRegularFile, open_no_follow

MAX_SETTINGS_BYTES = 1_000_000
"""A project settings file larger than this is not read (and counts as a finding)."""
QUOTE_CHARS = 60
"""How much of a command a finding quotes."""
MAX_DEPTH = 8
"""How deep a finding looks for the command to quote (a hostile file may nest far deeper)."""

CLAUDE_INERT = frozenset({
    "$schema", "model", "includeCoAuthoredBy", "cleanupPeriodDays", "outputStyle", "language",
    "alwaysThinkingEnabled", "enabledMcpjsonServers", "disabledMcpjsonServers", "enableAllProjectMcpServers",
    "respectGitignore", "spinnerTipsEnabled", "companyAnnouncements", "attribution", "theme", "verbose",
    "includeGitInstructions", "spinnerVerbs", "showTurnDuration", "disableAllHooks", "forceLoginMethod",
})
"""Claude Code settings that run nothing (``permissions`` is judged rule by rule)."""
CLAUDE_INERT_PERMISSIONS = frozenset({"deny", "ask", "additionalDirectories"})
CLAUDE_SAFE_MODES = frozenset({"default", "plan"})
CLAUDE_SAFE_TOOLS = frozenset({"Read", "Glob", "Grep", "LS", "WebSearch", "WebFetch", "TodoWrite", "NotebookRead"})
"""Tools an ``allow`` rule may name without counting: they read, they run nothing."""
CLAUDE_COMMAND_KEYS = ("apiKeyHelper", "awsAuthRefresh", "awsCredentialExport", "otelHeadersHelper")

CODEX_INERT = frozenset({
    "model", "review_model", "model_reasoning_effort", "model_reasoning_summary", "model_verbosity", "personality",
    "project_doc_max_bytes", "project_doc_fallback_filenames", "hide_agent_reasoning", "show_raw_agent_reasoning",
    "model_context_window", "model_auto_compact_token_limit", "plan_mode_reasoning_effort", "tui", "file_opener",
    "disable_paste_burst",
})
"""Codex settings that run nothing."""

GEMINI_INERT = frozenset({"$schema", "ui", "output", "model", "context", "ide"})
"""Gemini CLI settings sections that run nothing."""
GEMINI_INERT_GENERAL = frozenset({"vimMode", "disableAutoUpdate", "disableUpdateNag", "checkpointing",
                                  "enablePromptCompletion", "sessionRetention", "preferredEditor"})
GEMINI_ENV_FILES = (".gemini/.env", ".env")


def _quote(text: Any) -> str:
    return shown(str(text), QUOTE_CHARS)


def _read(path: Path, parse: Callable[[str], Any]) -> tuple[Any, str | None]:
    """A project file parsed as the CLI would (``None`` when absent), or why pao could not read it."""
    try:  # one open, checked on its fd: a file swapped for a FIFO after a look could hang the spawn
        fd = open_no_follow(path, os.O_RDONLY, follow=True, owned=False)  # a link: the CLI reads its target too
    except (FileNotFoundError, NotADirectoryError):
        return None, None
    except NotRegularFile:
        return None, "is not a regular file"
    except OSError as exc:
        return None, f"cannot be read ({exc.strerror})"
    with os.fdopen(fd, "rb") as handle:
        try:
            data = handle.read(MAX_SETTINGS_BYTES + 1)
        except OSError as exc:
            return None, f"cannot be read ({exc.strerror})"
    if len(data) > MAX_SETTINGS_BYTES:
        return None, f"is larger than {MAX_SETTINGS_BYTES} bytes"
    try:
        return parse(data.decode("utf-8")), None
    except (ValueError, RecursionError) as exc:  # JSON, TOML and UTF-8 errors are ValueErrors
        return None, f"does not parse ({' '.join(str(exc).split())[:80]})"


def _shown_path(path: Path, folder: Path) -> str:
    return str(path.relative_to(folder)) if path.is_relative_to(folder) else str(path)


def _first_command(value: Any, depth: int = 0) -> str | None:
    """The first ``command`` string in a hooks or server value (what a finding quotes), a few levels deep at most."""
    if depth > MAX_DEPTH:
        return None
    if isinstance(value, dict):
        if isinstance(value.get("command"), str):
            return " ".join([value["command"], *map(str, value.get("args") or [])])
        values: Iterable[Any] = value.values()
    elif isinstance(value, list):
        values = value
    else:
        return None
    return next((found for item in values if (found := _first_command(item, depth + 1))), None)


def _runs(key: str, value: Any) -> str:
    command = _first_command(value) if not isinstance(value, str) else value
    return f"{key} runs {_quote(command)}" if command else f"{key} is set"


def _unknown(key: str) -> str:
    return f"{key} is set (pao does not know it to be inert)"


def _ancestors(folder: Path, home: Path) -> Iterator[Path]:
    """``folder`` and every folder above it, the user's home left out."""
    for candidate in (folder, *folder.parents):
        if candidate != home:
            yield candidate


# -- Claude Code ----------------------------------------------------------------------------------


def claude_risks(folder: str, home: Path | None = None) -> list[str]:
    """What Claude Code would run from ``folder``'s project settings (and the ``.mcp.json`` files above it)."""
    root = Path(folder)
    home = Path(os.path.realpath(home or Path.home()))
    found: list[str] = []
    for name in (".claude/settings.json", ".claude/settings.local.json"):
        path = root / name
        data, problem = _read(path, json.loads)
        found += [f"{name}: {line}" for line in ([problem] if problem else _claude_settings(data))]
    for above in _ancestors(root, home):
        path = above / ".mcp.json"
        data, problem = _read(path, json.loads)
        servers = data.get("mcpServers") if isinstance(data, dict) else None
        lines = [problem] if problem else [_runs(f"mcpServers.{name}", server) for name, server in (servers or {}).items()]
        if data is not None and not isinstance(servers, dict) and not problem:
            lines = ["is present (pao cannot tell which servers it starts)"]
        found += [f"{_shown_path(path, root)}: {line}" for line in lines]
    return found


def _claude_settings(data: Any) -> list[str]:
    if data is None:
        return []
    if not isinstance(data, dict):
        return ["is not a JSON object (pao cannot tell what it runs)"]
    found = []
    for key, value in data.items():
        if key in CLAUDE_INERT:
            continue
        if key == "hooks" and isinstance(value, dict):
            found += [_runs(f"hooks.{event}", hooks) for event, hooks in value.items()]
        elif key == "statusLine" or key in CLAUDE_COMMAND_KEYS:
            found.append(_runs(key, value))
        elif key == "env" and isinstance(value, dict):
            found.append(f"env sets {', '.join(sorted(map(str, value)))[:QUOTE_CHARS]}")
        elif key == "permissions" and isinstance(value, dict):
            found += _claude_permissions(value)
        else:
            found.append(_unknown(key))
    return found


def _claude_permissions(permissions: dict[str, Any]) -> list[str]:
    found = []
    for key, value in permissions.items():
        if key == "allow" and isinstance(value, list):
            risky = [rule for rule in value if str(rule).split("(", 1)[0] not in CLAUDE_SAFE_TOOLS]
            found += [f"permissions.allow lets {_quote(rule)} run without asking" for rule in risky]
        elif key == "defaultMode":
            if value not in CLAUDE_SAFE_MODES:
                found.append(f"permissions.defaultMode is {_quote(value)}")
        elif key not in CLAUDE_INERT_PERMISSIONS:
            found.append(_unknown(f"permissions.{key}"))
    return found


# -- Codex --------------------------------------------------------------------------------------


def codex_project_folders(folder: Path) -> list[Path]:
    """The folders whose ``.codex/`` Codex loads: the project root (nearest ``.git`` above) down to ``folder``."""
    chain = [folder]
    for above in folder.parents:
        if (chain[-1] / ".git").exists():
            return chain
        chain.append(above)
    return chain if (chain[-1] / ".git").exists() else [folder]


def codex_risks(folder: str) -> list[str]:
    """What Codex would run from the project layers of ``folder`` (``.codex/`` from the project root down)."""
    import tomllib  # only this path needs it: start-up stays light

    root = Path(folder)
    found: list[str] = []
    for layer in codex_project_folders(root):
        config_path, hooks_path, rules = layer / ".codex/config.toml", layer / ".codex/hooks.json", layer / ".codex/rules"
        data, problem = _read(config_path, tomllib.loads)
        lines = [problem] if problem else [_codex_key(key, value) for key, value in (data or {}).items() if key not in CODEX_INERT]
        found += [f"{_shown_path(config_path, root)}: {line}" for line in lines]
        hooks, problem = _read(hooks_path, json.loads)
        if problem or hooks is not None:
            found.append(f"{_shown_path(hooks_path, root)}: {problem or _runs('hooks', hooks)}")
        if rules.is_dir() and any(rules.iterdir()):
            found.append(f"{_shown_path(rules, root)}: holds command rules (commands that run without asking)")
    return found


def _codex_key(key: str, value: Any) -> str:
    if key in ("mcp_servers", "hooks") and isinstance(value, dict) and value:
        name, first = next(iter(value.items()))
        return _runs(f"{key}.{name}", first) + (f" (and {len(value) - 1} more)" if len(value) > 1 else "")
    if key == "notify":
        return _runs(key, " ".join(map(str, value)) if isinstance(value, list) else value)
    return _unknown(key)


# -- Gemini CLI ---------------------------------------------------------------------------------


def gemini_risks(folder: str) -> list[str]:
    """What Gemini CLI would run or load from ``folder``'s workspace settings, extensions and ``.env`` files."""
    root = Path(folder)
    found: list[str] = []
    settings, problem = _read(root / ".gemini/settings.json", json.loads)
    if problem:
        found.append(f".gemini/settings.json: {problem}")
    elif settings is not None:
        lines = _gemini_settings(settings) if isinstance(settings, dict) else ["is not a JSON object"]
        found += [f".gemini/settings.json: {line}" for line in lines]
    extensions = root / ".gemini/extensions"
    if extensions.is_dir() and any(extensions.iterdir()):
        found.append(".gemini/extensions: holds extensions (their hooks and MCP servers run)")
    for name in GEMINI_ENV_FILES:
        if os.path.lexists(root / name):
            found.append(f"{name}: sets Gemini CLI's environment")
    return found


def _gemini_settings(settings: dict[str, Any]) -> list[str]:
    found = []
    for key, value in settings.items():
        if key in GEMINI_INERT:
            continue
        if key == "general" and isinstance(value, dict):
            found += [_unknown(f"general.{sub}") for sub in value if sub not in GEMINI_INERT_GENERAL]
        elif key in ("hooks", "mcpServers") and isinstance(value, dict):
            found += [_runs(f"{key}.{name}", entry) for name, entry in value.items()]
        elif key == "tools" and isinstance(value, dict):
            found += [_runs(f"tools.{sub}", entry) for sub, entry in value.items() if sub != "exclude"]
        else:
            found.append(_unknown(key))
    return found
