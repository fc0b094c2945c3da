"""Folder trust: when pao may pre-seed a CLI's trust for a folder, and the ``pao trust`` command.

A CLI that trusts a folder runs what the folder's own project settings say (hooks,
MCP servers, helper commands). pao pre-seeds that trust only where the user granted
it (``pao trust DIR``, kept in ``$PAO_HOME/trusted-folders.json``; or ``[trust] folders``
in the config file) or where the host profile read the folder's project settings and
found nothing that runs (``HostAgent.project_risks``). A trusted folder covers the
folders below it, as it does in the CLIs. Otherwise spawn refuses before any process
starts, or (``--let-cli-ask``, ``[trust] let_cli_ask``) starts the CLI without the
pre-seed and leaves its own trust dialog to the user.

Some folders are never pre-trusted, whoever asks (:func:`refusal`): ``/``, the home
folder and the folders above it, a world-writable folder, a folder inside a
world-writable folder without the sticky bit (anyone could swap it), and a folder
that belongs to another user.
"""

from __future__ import annotations

import json
import os
import shlex
import stat
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from pao_core.errors import PaoError, ValidationError

if TYPE_CHECKING:
    import argparse

    from pao_agents.readiness import Ready, ScreenReader
    from pao_core.config import PaoConfig
    from pao_agents.spec.contracts import HostAgent, TerminalDriver
    from pao_agents.spec.records import SpawnRequest

TRUST_FILE = "trusted-folders.json"
"""The folders the user trusted with ``pao trust``, under ``PAO_HOME`` (0600)."""
RISK_CHARS = 240
"""How much of the first finding a refusal quotes."""


@attrs.frozen
class TrustOptions:
    """``[trust]``: ``folders`` the user trusts (besides ``pao trust``'s), and whether spawn leaves an untrusted
    folder's question to the CLI's own dialog (``let_cli_ask``) instead of refusing."""

    folders: tuple[str, ...] = ()
    let_cli_ask: bool = False


@attrs.frozen
class TrustDecision:
    """Step 1's answer for one folder and host: pre-seed the CLI's trust (and why), or leave it to the CLI."""

    preseed: bool
    why: str


def trust_options(config: PaoConfig) -> TrustOptions:
    return config.options("trust", "", TrustOptions)


def refusal(folder: str, *, home: str | None = None) -> str | None:
    """Why pao never pre-trusts ``folder`` (one phrase), or ``None`` when it may."""
    real = os.path.realpath(folder)
    home = os.path.realpath(home or os.path.expanduser("~"))
    if real == os.sep:
        return "it is the whole file system"
    if real == home or home.startswith(real.rstrip(os.sep) + os.sep):
        return "it is your home folder or holds it (every folder in it would be trusted)"
    try:
        info = os.stat(real)
    except OSError as exc:
        return f"it cannot be read ({exc.strerror})"
    if not stat.S_ISDIR(info.st_mode):
        return "it is not a folder"
    if info.st_uid != os.geteuid():
        return f"it belongs to another user (uid {info.st_uid})"
    if info.st_mode & stat.S_IWOTH:
        return "anyone may write to it"
    for parent in Path(real).parents:
        mode = os.stat(parent).st_mode
        if mode & stat.S_IWOTH and not mode & stat.S_ISVTX:
            return f"it is inside {parent}, which anyone may write to (and so replace it)"
    return None


def trust_file(config: PaoConfig) -> Path:
    return Path(config.home) / TRUST_FILE


def _stored(config: PaoConfig) -> list[str]:
    path = trust_file(config)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return []
    except (OSError, ValueError) as exc:
        raise PaoError(f"{path} cannot be read ({exc}); fix or remove it") from None
    folders = data.get("folders") if isinstance(data, dict) else None
    if not isinstance(folders, list) or not all(isinstance(folder, str) for folder in folders):
        raise PaoError(f"{path} holds no list of folders; fix or remove it")
    return folders


def trusted_folders(config: PaoConfig) -> list[tuple[str, str]]:
    """Every folder the user trusted, with where it is written (``pao trust`` or the config file)."""
    configured = [os.path.realpath(os.path.expanduser(folder)) for folder in trust_options(config).folders]
    return [(folder, "pao trust") for folder in _stored(config)] + [(folder, "[trust] folders") for folder in configured]


def granted_by(folder: str, config: PaoConfig) -> str | None:
    """The trusted folder that covers ``folder`` (itself or a folder above it), ignoring any pao never trusts."""
    real = os.path.realpath(folder)
    for trusted, _ in trusted_folders(config):
        if (real == trusted or real.startswith(trusted.rstrip(os.sep) + os.sep)) and refusal(trusted) is None:
            return trusted
    return None


def _edit(config: PaoConfig, change: Any) -> None:
    from pao_core.files import private_dir  # only this path needs it: start-up stays light
    from pao_agents.jsonedit import update_json  # only this path needs it: start-up stays light

    private_dir(config.home)
    update_json(trust_file(config), change, backup=False)


def trust(config: PaoConfig, folder: str) -> str:
    """Add ``folder`` (its real path) to the user's trusted folders; refused, with one line, for a folder pao never trusts."""
    real = os.path.realpath(os.path.expanduser(folder))
    reason = refusal(real)
    if reason:
        raise ValidationError(f"pao will not trust {shown_path(real)}: {reason}")
    _stored(config)  # a broken file is reported, never overwritten

    def change(data: dict[str, Any]) -> None:
        folders = data.setdefault("folders", [])
        if real not in folders:
            folders.append(real)

    _edit(config, change)
    return real


def untrust(config: PaoConfig, folder: str) -> str:
    """Remove ``folder`` from ``pao trust``'s folders; a one-line error when it is not there."""
    real = os.path.realpath(os.path.expanduser(folder))
    if real not in _stored(config):
        configured = any(real == listed for listed, source in trusted_folders(config) if source != "pao trust")
        where = " (it is in the config file's [trust] folders: remove it there)" if configured else ""
        raise ValidationError(f"{shown_path(real)} is not among the folders you trusted with pao trust{where}")
    _edit(config, lambda data: data.__setitem__("folders", [f for f in data.get("folders", []) if f != real]))
    return real


def shown_path(folder: str) -> str:
    """A folder as a shell word the user can paste (quoted when it needs to be)."""
    return shlex.quote(folder)


def decide(host: HostAgent, folder: str, config: PaoConfig, *, let_cli_ask: bool | None = None) -> TrustDecision:
    """Whether spawn pre-seeds ``host``'s trust for ``folder``; raises one line when it will not and the CLI may not ask."""
    ask = trust_options(config).let_cli_ask if let_cli_ask is None else let_cli_ask
    reason = refusal(folder)
    if reason is None:
        granted = granted_by(folder, config)
        if granted:
            return TrustDecision(True, f"you trusted {granted}")
        risks = host.project_risks(folder)
        if not risks:
            return TrustDecision(True, "its project settings run nothing")
        from pao_core.sanitize import strip_controls  # only a refusal needs it: not on the way to the CLI's start

        first = strip_controls(risks[0])[:RISK_CHARS] + (f" (and {len(risks) - 1} more)" if len(risks) > 1 else "")
        message = (f"{folder} is not trusted and {host.name} would run what it says: {first}; "
                   f"trust it with `pao trust {shown_path(folder)}`")
    else:
        message = f"pao never pre-trusts {folder}: {reason}"
    if ask:
        return TrustDecision(False, message)
    raise ValidationError(f"{message} (or let {host.name} ask: pao spawn --let-cli-ask)")


def preseed_step(host_agent: HostAgent, folder: str, decision: TrustDecision) -> dict[str, Any]:
    """Step 5: the host's pre-seed where step 1 allowed it; what it added to the user's files, for ``kill --clean``."""
    if not decision.preseed:
        return {"trust": {"preseeded": False, "why": decision.why}}
    added = host_agent.preseed(folder)
    return {"trust": {"preseeded": True, "why": decision.why, "added": dict(added or {})}}


def wait_or_ask(driver: TerminalDriver, target: str, reader: ScreenReader, timeout: float, request: SpawnRequest,
                decision: TrustDecision) -> Ready:
    """Step 7; where pao left the folder's trust to the CLI, its dialog is the user's to answer: a blocked screen
    then ends the wait (the agent is ``waiting``) instead of failing the spawn."""
    from pao_agents.readiness import AgentBlocked, Ready, wait_ready  # only spawn needs it: start-up stays light
    from pao_agents.spec.records import ScreenVerdict  # records: only spawn needs them

    try:
        return wait_ready(driver, target, reader, timeout, name=request.name, busy=bool(request.prompt))
    except AgentBlocked as exc:
        if decision.preseed:
            raise
        reason = f"{exc} ({decision.why}); answer it in its window: pao attach {request.name}"
        return Ready(ScreenVerdict("blocked", reason), driver.read(target), 0.0, 0)


def add_command(subparsers: argparse._SubParsersAction) -> None:
    """``pao trust DIR``, ``pao trust --list``, ``pao trust --remove DIR``."""
    parser = subparsers.add_parser("trust", help="trust a folder: pao may then pre-seed the CLIs' trust for it")
    parser.add_argument("folder", metavar="DIR", nargs="?", help="the folder to trust (and every folder below it)")
    parser.add_argument("--list", action="store_true", help="list the folders you trusted")
    parser.add_argument("--remove", action="store_true", help="take DIR off the list")
    parser.add_argument("--json", action="store_true", help="print the result as one JSON object")
    parser.set_defaults(func=run_trust)


def run_trust(args: argparse.Namespace, config: PaoConfig) -> int:
    import sys  # only this path needs it: start-up stays light

    from pao_core.output import print_json  # only this path needs it: start-up stays light

    if args.list == bool(args.folder):
        raise ValidationError("give a folder (pao trust DIR, pao trust --remove DIR) or --list")
    if args.list:
        rows = [{"folder": folder, "source": source, "ignored": refusal(folder)} for folder, source in trusted_folders(config)]
        if args.json:
            print_json({"folders": rows})
        for row in [] if args.json else rows:
            print(f"{row['folder']}\t{row['source']}" + (f"\t(ignored: {row['ignored']})" if row["ignored"] else ""))
        return 0
    action = "untrust" if args.remove else "trust"
    folder = untrust(config, args.folder) if args.remove else trust(config, args.folder)
    if args.json:
        print_json({"action": action, "folder": folder})
    else:
        done = "no longer trusted:" if args.remove else "trusted"
        print(f"pao: {done} {folder}" + ("" if args.remove else " (and the folders below it)"), file=sys.stderr)
    return 0
