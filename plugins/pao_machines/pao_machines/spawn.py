"""``pao spawn TOPIC --on TARGET --folder DIR``: the briefing here, the agent there.

1. Validate everything that can be checked here (the target, the topic, the folder's
   form, the name) before any connection or process.
2. Reserve the name in this machine's registry (a record with ``machine`` set).
3. Gather and compose the briefing from the memory stores this machine reaches.
4. Run the remote pao's own spawn (``pao machine here -- spawn ... --briefing-stdin``)
   with the briefing on its stdin, never on a command line: the session channel,
   trust pre-seeding, locks and readiness all happen there, on the remote user's files.
5. Record what the machine reported; on any failure remove the reservation, so no
   half-registered agent stays behind (the remote pao undoes its own half).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import posixpath
import shlex
import sys
import time
from typing import TYPE_CHECKING, Any

from pao_agents.spec import spawn_options
from pao_agents.spec import check_name, name_from_folder, name_from_topic, numbered
from pao_core.errors import PaoError, ValidationError
from pao_core.gather import brief
from pao_core.output import print_json
from pao_core.topic import check_topic, reject_control
from pao_machines.remote import COMMAND_TIME, call, pao_words, shared_registry
from pao_machines.targets import Machine, resolve

if TYPE_CHECKING:
    from pao_core.config import PaoConfig
    from pao_agents.spec import AgentRecord


def spawn_on(args: argparse.Namespace, config: PaoConfig) -> int:
    from pao_agents.spec import AgentRecord, Agents  # loaded on use
    from pao_core.models import converter  # as the records

    machine = resolve(config, args.on)
    folder, name, base = _validate(args)
    if args.worktree:
        raise ValidationError("--worktree with --on is not supported yet: make the worktree on that machine")
    agents = Agents.open(config)
    shared = shared_registry(config)
    host = args.host or spawn_options(config).host
    record: AgentRecord | None = None
    if name is not None and name in agents.registry.names():
        raise ValidationError(f"an agent named {name!r} already exists (pick another --name)")
    if not shared:  # this machine's copy, reserved first: the name is this registry's
        reserved = AgentRecord(name or base, folder, args.topic, host, args.terminal or "", target="",
                               machine=machine.name)
        record = agents.registry.add(reserved, None if name else lambda n: numbered(base, n))
        name = record.name
    started = time.monotonic()
    try:
        briefing = brief(args.topic, folders=[folder], config=config, plugins=agents.plugins)
        composed = time.monotonic()
        _say(f"{'2-3 gather+compose':<20} {(composed - started) * 1000:8.1f} ms  "
             f"{len(briefing.items)} items from {len(briefing.backends)} backends (here)")
        payload = json.dumps(converter.unstructure(briefing), default=str)
        ready_timeout = args.timeout or spawn_options(config).ready_timeout
        remote = _remote_spawn_args(args, name, folder, host, ready_timeout)
        data = call(config, machine, remote, timeout=ready_timeout + COMMAND_TIME, stdin=payload)
        _say(f"{'remote spawn':<20} {(time.monotonic() - composed) * 1000:8.1f} ms  on {machine.name}")
        if record is not None:
            record = _record_remote(agents.registry, record, machine, data)
    except BaseException:
        if record is not None:
            with contextlib.suppress(PaoError, OSError):
                agents.registry.remove(record.name)
        raise
    name = str(data.get("name"))
    mismatch = _registry_mismatch(agents, args, machine, data, folder, host) if shared else None
    if mismatch is not None:
        record, data = mismatch
    if shared and data.get("machine") != machine.name:
        _say(f"note: that machine calls itself {data.get('machine')!r}, not {machine.name!r}: set [machine] name = "
             f"\"{machine.name}\" there, or name it [machines.{data.get('machine')}] here, so commands reach it")
    if args.json:
        print_json({**data, "machine": machine.name if record is not None else data.get("machine")})
    else:
        print(f"{name}\t{data.get('state')}\t{machine.name}:{data.get('target')}\t{data.get('folder')}")
    _say(f"attach with: pao attach {shlex.quote(name)}")
    return 0


def _registry_mismatch(agents: Any, args: argparse.Namespace, machine: Machine, data: dict[str, Any], folder: str,
                       host: str) -> tuple[AgentRecord, dict[str, Any]] | None:
    """When this machine shares a registry (``[registry] url``) and the agent's record is not in it, that machine
    keeps a registry of its own: say so, and keep a copy here, so ``pao list`` here still shows the agent."""
    from pao_agents.spec import AgentRecord  # loaded on use

    name = str(data.get("name"))
    if agents.registry.find(name) is not None:
        return None
    warning = (f"machine {machine.name} keeps its own agent registry, not this machine's "
               f"({agents.registry.location()}): {name!r} runs there and is recorded here too; set [registry] url "
               f"(or PAO_REGISTRY_URL) there to the same database, so every machine sees one registry")
    _say(f"warning: {warning}")
    reserved = AgentRecord(name, folder, args.topic, host, args.terminal or "", target="", machine=machine.name)
    record = _record_remote(agents.registry, agents.registry.add(reserved), machine, data)
    return record, {**data, "registry_mismatch": warning}


def _validate(args: argparse.Namespace) -> tuple[str, str | None, str]:
    """The remote folder (as given: that machine resolves it), the chosen name or ``None``, the base name."""
    check_topic(args.topic)
    if not args.folder:
        raise ValidationError("spawn --on needs --folder DIR: the agent's folder on that machine")
    folder = reject_control(args.folder, "the folder")
    if not folder.strip() or folder.startswith("-"):
        raise ValidationError(f"{folder!r} is not a folder")
    name = None
    if args.name is not None:
        reject_control(args.name, "the agent name")
        name = check_name(args.name)
    base = name_from_topic(args.topic) or name_from_folder(posixpath.normpath(folder))  # as a local spawn names it
    return folder, name, base


def _remote_spawn_args(args: argparse.Namespace, name: str | None, folder: str, host: str, timeout: float) -> list[str]:
    # --option=VALUE: a value that starts with '-' stays the option's value
    options = [f"--folder={folder}", f"--host={host}", f"--timeout={timeout:g}", "--briefing-stdin", "--json"]
    if name is not None:
        options.append(f"--name={name}")
    if args.terminal:
        options.append(f"--terminal={args.terminal}")
    if args.no_nudge:
        options.append("--no-nudge")
    if args.permission_mode:
        options.append(f"--permission-mode={args.permission_mode}")
    if args.no_mcp:
        options.append("--no-mcp")
    if args.let_cli_ask:  # the remote pao decides trust, on the remote user's files and list
        options.append("--let-cli-ask")
    return pao_words("spawn", args.topic, options=options)


def _record_remote(registry: Any, record: AgentRecord, machine: Machine, data: dict[str, Any]) -> AgentRecord:
    """This machine's copy of the record the machine reported (its paths stay its own, under ``remote``)."""
    if data.get("name") != record.name:
        raise PaoError(f"machine {machine.name} started {data.get('name')!r}, not {record.name!r}")
    extra = {"remote": {key: data.get(key) for key in ("extra", "steps", "machine") if key in data}}
    return registry.update(record.name, state=str(data.get("state") or "starting"), folder=str(data.get("folder") or
                           record.folder), target=str(data.get("target") or ""), pid=data.get("pid"),
                           session_id=data.get("session_id"), briefing_hash=data.get("briefing_hash"),
                           terminal=str(data.get("terminal") or record.terminal), extra=extra)


def _say(message: str) -> None:
    print(f"pao: {message}", file=sys.stderr, flush=True)
