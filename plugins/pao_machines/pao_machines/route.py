"""Routing: an agent's command runs on the machine that runs the agent, through that machine's own pao.

In the default per-machine registry this machine keeps a copy of each remote agent's
record (``machine`` set); the remote machine keeps the real one.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from pao_agents.spec import spawn_options
from pao_agents.spec import Agents
from pao_core.errors import PaoError
from pao_core.output import print_json
from pao_machines.remote import (COMMAND_TIME, call, machine_for, pao_words, remote_pao, runs_here,
                                 shared_registry)
from pao_machines.ssh import MachineRefused, MachineUnreachable, RemoteFailed, Ssh
from pao_machines.targets import Machine

if TYPE_CHECKING:
    from pao_core.config import PaoConfig
    from pao_agents.spec import AgentRecord

def route(args: argparse.Namespace, config: PaoConfig) -> int | None:
    """Run ``args``' command where it belongs: ``None`` when that is here."""
    command = args.command
    if command == "spawn":
        from pao_machines.spawn import spawn_on  # only this path needs it

        return spawn_on(args, config)
    if command == "broadcast":
        return broadcast(args, config)
    record = _registry(config).find(args.name)
    if record is None or runs_here(record, config):
        return None
    if command == "kill" and args.forget:
        return None  # forgetting is this machine's business: its copy goes, the machine is not asked
    return agent_command(args, config, record)


def _registry(config: PaoConfig) -> Any:
    from pao_agents.spec import open_registry  # loaded on use

    return open_registry(config)


def _remote_args(args: argparse.Namespace) -> list[str]:
    options = ["--json"]
    if args.command == "status" and args.screen:
        options.append("--screen")
    if args.command == "kill" and args.clean:
        options.append("--clean")
    if args.command == "resume" and args.timeout:
        options += ["--timeout", f"{args.timeout:g}"]
    positionals = [args.name, args.text] if args.command == "send" else [args.name]
    return pao_words(args.command, *positionals, options=options)


def agent_command(args: argparse.Namespace, config: PaoConfig, record: AgentRecord) -> int:
    """Run one agent's command on its machine; keep this machine's copy of its record in step."""
    machine = machine_for(config, record)
    if args.command == "attach":
        return attach(config, machine, record)
    timeout = COMMAND_TIME + (getattr(args, "timeout", None) or spawn_options(config).ready_timeout if args.command == "resume" else 0)
    data = call(config, machine, _remote_args(args), timeout=timeout)
    agent = data.get("agent") if args.command != "status" else data
    registry = _registry(config)
    if shared_registry(config) and "remote" not in record.extra:  # "remote": a copy kept here (spawn.py's mismatch)
        pass  # the machine changed the one record every machine reads
    elif args.command == "kill":
        with contextlib.suppress(PaoError):
            registry.remove(record.name)
    elif isinstance(agent, dict) and args.command in ("pause", "resume"):
        keep_in_step(registry, record, agent)
    if args.json:
        print_json({**data, "machine": machine.name})
        return 0
    if args.command == "status":
        for key, value in {**data, "machine": machine.name}.items():
            if key not in ("observed", "screen"):
                print(f"{key:<14}{value}")
        observed = data.get("observed") or {}
        print(f"{'observed':<14}{observed.get('state')}{': ' + observed['reason'] if observed.get('reason') else ''}")
        sys.stdout.write(data.get("screen", ""))
    elif args.command == "checkpoint":
        print(f"{machine.name}:{data.get('checkpoint')}")
    else:
        said = {"send": "sent to", "kill": "killed", "pause": "paused", "resume": "resumed"}[args.command]
        print(f"pao: {said} {record.name} on {machine.name}", file=sys.stderr)
    return 0


def keep_in_step(registry: Any, record: AgentRecord, agent: dict[str, Any]) -> None:
    """This machine's copy of a remote record takes the state, target and session the machine reported."""
    changes = {key: agent[key] for key in ("state", "target", "pid", "session_id") if key in agent}
    with contextlib.suppress(PaoError):
        registry.update(record.name, **changes)


def attach(config: PaoConfig, machine: Machine, record: AgentRecord) -> int:
    """``pao attach`` on a remote agent: its machine's ``pao attach`` in this terminal (``ssh -t``)."""
    return Ssh(config.home).run_in_terminal(machine, remote_pao(machine, *pao_words("attach", record.name)))


def broadcast(args: argparse.Namespace, config: PaoConfig) -> int | None:
    """``pao broadcast``: agents here through pao's own send, agents elsewhere through their machines, in parallel."""

    agents = Agents.open(config)
    only = [name.strip() for name in args.only.split(",") if name.strip()] if args.only else None
    if only is None:
        records = [record for record in agents.registry.list() if record.state != "paused"]
    else:
        records = [agents.registry.get(name) for name in dict.fromkeys(only)]
    if all(runs_here(record, config) for record in records):
        return None

    def send(record: AgentRecord) -> str | None:
        try:
            if runs_here(record, config):
                agents.send(record.name, args.text)
            else:
                words = pao_words("send", record.name, args.text, options=["--json"])
                call(config, machine_for(config, record), words, timeout=COMMAND_TIME)
        except PaoError as exc:
            return str(exc)
        return None

    with ThreadPoolExecutor(max_workers=min(16, len(records))) as pool:
        outcome = dict(zip((r.name for r in records), pool.map(send, records)))
    failed = [name for name, error in outcome.items() if error]
    if args.json:
        print_json({"action": "broadcast", "results": {n: {"sent": e is None, "error": e} for n, e in outcome.items()},
                    "failed": failed})
    else:
        for name, error in outcome.items():
            print(f"pao: {name}: {error}" if error else f"pao: sent to {name}", file=sys.stderr)
    if failed:
        raise PaoError(f"broadcast failed for {len(failed)} of {len(outcome)} agents: {', '.join(failed)}")
    return 0


__all__ = ["MachineRefused", "MachineUnreachable", "RemoteFailed", "route"]
