"""Step 5 for Claude Code: pre-seed folder trust so the agent starts without a dialog.

Facts (measured on 2.0.77, 2.1.197 and 2.1.332):

- ``~/.claude.json`` ``projects[<absolute folder>].hasTrustDialogAccepted = true``
  suppresses the trust dialog (a trusted parent covers its children); 1.0.x crashes
  without ``allowedTools: []`` in that entry.
- ``~/.claude/settings.json`` ``skipDangerousModePermissionPrompt: true`` suppresses
  the bypass-mode warning on 2.1.x; 2.0.x and 1.0.x read ``bypassPermissionsModeAccepted:
  true`` at the top level of ``~/.claude.json``. Both are written.
- ``<folder>/.claude/settings.local.json`` with ``enabledMcpjsonServers`` (or
  ``enableAllProjectMcpServers``) suppresses the new-MCP-server dialog.

Claude Code rewrites ``~/.claude.json`` itself, under a proper-lockfile lock: a
*directory* ``~/.claude.json.lock`` made with ``mkdir``, stale once its mtime is
10 s old (both 2.0.77's ``cli.js`` and the 2.1.332 binary use it). pao holds that
same lock, inside its own pid lock, for the few milliseconds of its
read-merge-write, so neither side loses the other's keys. Onboarding and API-key
approval are the user's consent and are never written here.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from pathlib import Path
from typing import Any, Iterator, Literal, Sequence

from pao_core.files import LockTimeout, ensure_dir
from pao_agents.spec import UnreadableJSON, update_json
from pao_core.waiting import poll_until
from pao_hosts.common import read_settings

McpApproval = Literal["folder", "all", "none"]

CLAUDE_LOCK_STALE_SECONDS = 10.0
"""proper-lockfile's default ``stale``: a lock directory older than this is abandoned."""


def _config_dir_override(home: Path | None) -> Path | None:
    """``$CLAUDE_CONFIG_DIR``, which moves all of Claude Code's files, unless ``home`` is given explicitly."""
    config_dir = os.environ.get("CLAUDE_CONFIG_DIR")
    return Path(config_dir).expanduser() if config_dir and home is None else None


def claude_dir(home: Path | None = None) -> Path:
    """``~/.claude`` (settings, transcripts), or ``$CLAUDE_CONFIG_DIR``."""
    return _config_dir_override(home) or (home or Path.home()) / ".claude"


def claude_config_path(home: Path | None = None) -> Path:
    """``~/.claude.json``, or ``$CLAUDE_CONFIG_DIR/.claude.json``; a legacy ``~/.claude/.config.json`` wins (as in the CLI)."""
    legacy = claude_dir(home) / ".config.json"
    if legacy.exists():
        return legacy
    return (_config_dir_override(home) or home or Path.home()) / ".claude.json"


def claude_settings_path(home: Path | None = None) -> Path:
    return claude_dir(home) / "settings.json"


@contextlib.contextmanager
def claude_lock(config_file: Path, *, timeout: float = 10.0) -> Iterator[None]:
    """Hold Claude Code's own lock on ``config_file``: the directory ``<file>.lock``.

    Same protocol as proper-lockfile: ``mkdir`` is the atomic take, a lock whose mtime
    is older than 10 s is stale and removed, ``rmdir`` releases. Claude Code names the
    lock after the path it was given (``lockfilePath: file + ".lock"``), so when
    ``config_file`` is a symlink the lock sits beside the link, not the real file.
    """
    lock_dir = config_file.with_name(config_file.name + ".lock")

    def take() -> bool:
        with contextlib.suppress(FileExistsError):
            os.mkdir(lock_dir)
            return True
        with contextlib.suppress(OSError):  # released meanwhile, or a stale one removed: the next poll takes it
            if time.time() - lock_dir.stat().st_mtime > CLAUDE_LOCK_STALE_SECONDS:
                os.rmdir(lock_dir)
        return False

    if not poll_until(take, timeout):
        raise LockTimeout(f"{lock_dir} is held by a running Claude Code; try again, or remove it if no claude is running")
    try:
        yield
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.rmdir(lock_dir)


PAO_PROJECT_KEYS = {"hasTrustDialogAccepted": True, "allowedTools": []}
"""What pao writes into ``projects[<folder>]``; ``untrust_folder`` removes a key only while it still holds this value."""


def trust_folder(folder: str, *, home: Path | None = None, bypass: bool = True, timeout: float = 10.0) -> dict[str, Any]:
    """Mark ``folder`` trusted in ``~/.claude.json`` (and bypass mode accepted when ``bypass``).

    Returns what pao added (for :func:`untrust_folder`): the file, the folder and the keys
    that were not there before; a folder the user or the CLI had trusted already adds nothing.
    """
    config_file = claude_config_path(home)
    added: list[str] = []

    def change(data: dict[str, Any]) -> None:
        entry = _project_entry(data, folder, config_file, create=True)
        added[:] = [key for key in PAO_PROJECT_KEYS if key not in entry or key == "hasTrustDialogAccepted"
                    and entry[key] is not True]
        entry["hasTrustDialogAccepted"] = True
        entry.setdefault("allowedTools", [])
        if bypass:
            data["bypassPermissionsModeAccepted"] = True

    update_json(config_file, change, timeout=timeout, hold=lambda: claude_lock(config_file, timeout=timeout))
    return {"file": str(config_file), "folder": folder, "keys": added} if added else {}


def untrust_folder(added: dict[str, Any], *, timeout: float = 10.0) -> None:
    """Remove what :func:`trust_folder` added, where it is still as pao wrote it; keys the CLI or the user
    added since stay, and so does the folder's entry while it holds any."""
    config_file, folder = Path(added["file"]), str(added["folder"])
    if not config_file.exists():
        return

    def change(data: dict[str, Any]) -> None:
        entry = _project_entry(data, folder, config_file, create=False)
        if entry is None:
            return
        for key in added.get("keys") or ():
            if key in PAO_PROJECT_KEYS and entry.get(key) == PAO_PROJECT_KEYS[key]:
                del entry[key]
        if not entry:
            del data["projects"][folder]

    update_json(config_file, change, timeout=timeout, hold=lambda: claude_lock(config_file, timeout=timeout))


def _project_entry(data: dict[str, Any], folder: str, config_file: Path, *, create: bool) -> Any:
    projects = data.get("projects")
    if projects is None and create:
        projects = data["projects"] = {}
    if projects is None:
        return None
    if not isinstance(projects, dict):
        raise UnreadableJSON(f"{config_file}: 'projects' is not an object; pao will not overwrite it")
    entry = projects.setdefault(folder, {}) if create else projects.get(folder)
    if entry is not None and not isinstance(entry, dict):
        raise UnreadableJSON(f"{config_file}: projects[{folder!r}] is not an object; pao will not overwrite it")
    return entry


def accept_bypass_warning(*, home: Path | None = None) -> None:
    """``skipDangerousModePermissionPrompt: true`` in ``~/.claude/settings.json`` (2.1.x)."""
    settings = claude_settings_path(home)
    ensure_dir(settings.parent)
    update_json(settings, lambda data: data.__setitem__("skipDangerousModePermissionPrompt", True))


def mcp_server_names(folder: str) -> list[str]:
    """Server names in ``<folder>/.mcp.json`` (empty when there is none); raises on a broken file."""
    path = Path(folder) / ".mcp.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return []
    except (ValueError, UnicodeDecodeError) as exc:
        raise UnreadableJSON(f"{path} is not valid JSON ({exc}); Claude Code would not load it either") from None
    servers = data.get("mcpServers") if isinstance(data, dict) else None
    return sorted(servers) if isinstance(servers, dict) else []


def approve_mcp_servers(folder: str, approval: McpApproval, extra: Sequence[str] = ()) -> None:
    """Write the MCP allowlist into ``<folder>/.claude/settings.local.json``.

    ``folder``: the servers named in the folder's ``.mcp.json`` (plus ``extra``) join
    ``enabledMcpjsonServers``; ``all``: ``enableAllProjectMcpServers``; ``none``: nothing
    (the CLI then asks, and the detector says so). Servers the user disabled stay disabled.
    """
    if approval == "none":
        return
    names = mcp_server_names(folder) + list(extra)
    if approval == "folder" and not names:
        return
    settings = Path(folder) / ".claude" / "settings.local.json"
    ensure_dir(settings.parent)

    def change(data: dict[str, Any]) -> None:
        if approval == "all":
            data["enableAllProjectMcpServers"] = True
            return
        disabled = set(data.get("disabledMcpjsonServers") or [])
        enabled = list(data.get("enabledMcpjsonServers") or [])
        enabled += [name for name in names if name not in enabled and name not in disabled]
        data["enabledMcpjsonServers"] = enabled

    update_json(settings, change, no_symlink=True)


def onboarding_gaps(api_key: str | None, *, home: Path | None = None) -> list[str]:
    """What the user has not consented to yet (pao never writes these): one line each."""
    config_file = claude_config_path(home)
    data, problem = read_settings(config_file)
    if problem is not None:
        return [f"{config_file} is not valid JSON; fix or move it"]
    gaps = []
    if not isinstance(data, dict) or not data.get("hasCompletedOnboarding"):
        gaps.append("Claude Code's first-run set-up is not done: run `claude` once yourself and finish it")
    if api_key and isinstance(data, dict):
        approved = (data.get("customApiKeyResponses") or {}).get("approved") or []
        if api_key[-20:] not in approved:
            gaps.append(
                "ANTHROPIC_API_KEY is set but not approved in Claude Code: run `claude` once and answer "
                "'Yes' to 'Do you want to use this API key?'"
            )
    return gaps
