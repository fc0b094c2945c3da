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

from pao_core import topic as topics
from pao_core.errors import PaoError, ValidationError
from pao_core.output import print_json

from pao_machines.remote import COMMAND_TIME, call
from pao_machines.targets import Machine, resolve

if TYPE_CHECKING:
    from pao_core.config import PaoConfig
    from pao_core.models import AgentRecord


def spawn_on(args: argparse.Namespace, config: PaoConfig) -> int:
    from pao_core.lifecycle import Agents  # loaded on use
    from pao_core.models import AgentRecord
    from pao_core.pipeline import brief

    machine = resolve(config, args.on)
    folder, name, base = _validate(args)
    if args.worktree:
        raise ValidationError("--worktree with --on is not supported yet: make the worktree on that machine")
    agents = Agents.open(config)
    host = args.host or config.spawn.host
    reserved = AgentRecord(name or base, folder, args.topic, host, args.terminal or "", target="",
                           extra={"machine": machine.name})
    reserved = _with_machine(reserved, machine)
    if name is not None:
        if name in agents.registry.names():
            raise ValidationError(f"an agent named {name!r} already exists (pick another --name)")
        record = agents.registry.add(reserved)
    else:
        record = agents.registry.add_unique(reserved, lambda n: topics.numbered(base, n))
    started = time.monotonic()
    try:
        briefing = brief(args.topic, folders=[folder], config=config, plugins=agents.plugins)
        composed = time.monotonic()
        _say(f"{'2-3 gather+compose':<20} {(composed - started) * 1000:8.1f} ms  "
             f"{len(briefing.items)} items from {len(briefing.backends)} backends (here)")
        from pao_core.models import converter

        payload = json.dumps(converter.unstructure(briefing), default=str)
        ready_timeout = args.timeout or config.spawn.ready_timeout
        remote = _remote_spawn_args(args, record.name, folder, host, ready_timeout)
        data = call(config, machine, remote, timeout=ready_timeout + COMMAND_TIME, stdin=payload)
        _say(f"{'remote spawn':<20} {(time.monotonic() - composed) * 1000:8.1f} ms  on {machine.name}")
        record = _record_remote(agents.registry, record, machine, data)
    except BaseException:
        with contextlib.suppress(PaoError, OSError):
            agents.registry.remove(record.name)
        raise
    if args.json:
        print_json({**data, "machine": machine.name, "name": record.name})
    else:
        print(f"{record.name}\t{record.state}\t{machine.name}:{record.target}\t{record.folder}")
    _say(f"attach with: pao attach {shlex.quote(record.name)}")
    return 0


def _validate(args: argparse.Namespace) -> tuple[str, str | None, str]:
    """The remote folder (as given: that machine resolves it), the chosen name or ``None``, the base name."""
    topics.check_topic(args.topic)
    if not args.folder:
        raise ValidationError("spawn --on needs --folder DIR: the agent's folder on that machine")
    folder = topics.reject_control(args.folder, "the folder")
    if not folder.strip() or folder.startswith("-"):
        raise ValidationError(f"{folder!r} is not a folder")
    name = None
    if args.name is not None:
        topics.reject_control(args.name, "the agent name")
        name = topics.check_name(args.name)
    base = topics.name_from_folder(posixpath.normpath(folder))
    return folder, name, base


def _remote_spawn_args(args: argparse.Namespace, name: str, folder: str, host: str, timeout: float) -> list[str]:
    words = ["spawn", args.topic, "--folder", folder, "--name", name, "--host", host, "--timeout", f"{timeout:g}",
             "--briefing-stdin", "--json"]
    if args.terminal:
        words += ["--terminal", args.terminal]
    if args.no_nudge:
        words.append("--no-nudge")
    if args.permission_mode:
        words += ["--permission-mode", args.permission_mode]
    if args.no_mcp:
        words.append("--no-mcp")
    return words


def _with_machine(record: AgentRecord, machine: Machine) -> AgentRecord:
    import attrs

    if "machine" in attrs.fields_dict(type(record)):
        return attrs.evolve(record, machine=machine.name)
    return record


def _record_remote(registry: Any, record: AgentRecord, machine: Machine, data: dict[str, Any]) -> AgentRecord:
    """This machine's copy of the record the machine reported (its paths stay its own, under ``remote``)."""
    if data.get("name") != record.name:
        raise PaoError(f"machine {machine.name} started {data.get('name')!r}, not {record.name!r}")
    extra = {"machine": machine.name, "remote": {key: data.get(key) for key in ("extra", "steps") if key in data}}
    return registry.update(record.name, state=str(data.get("state") or "starting"), folder=str(data.get("folder") or
                           record.folder), target=str(data.get("target") or ""), pid=data.get("pid"),
                           session_id=data.get("session_id"), briefing_hash=data.get("briefing_hash"),
                           terminal=str(data.get("terminal") or record.terminal), extra=extra)


def _say(message: str) -> None:
    print(f"pao: {message}", file=sys.stderr, flush=True)
