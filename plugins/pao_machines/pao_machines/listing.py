"""``pao list`` across machines: this machine's agents observed here, every other machine asked in parallel.

Each machine costs at most its deadline (``[machines.NAME] deadline``, 2 s by default).
A machine that does not answer in time, refuses, or cannot be named any more leaves its
agents in the list as ``unreachable`` with the reason: never hidden, never removed.
"""

from __future__ import annotations

import argparse
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Sequence

import attrs

from pao_agents.spec import record_json
from pao_agents.spec import Observation
from pao_agents.spec import age_text
from pao_core.errors import PaoError
from pao_core.output import print_json, print_table
from pao_machines.remote import call, machine_of, runs_here
from pao_machines.targets import resolve

if TYPE_CHECKING:
    from pao_agents.spec import Agents
    from pao_core.config import PaoConfig
    from pao_agents.spec import AgentRecord


@attrs.frozen
class Seen:
    """One machine's answer: its agents' JSON by name, or why it could not answer."""

    agents: dict[str, dict[str, Any]]
    error: str | None = None
    seconds: float = 0.0


def ask(config: PaoConfig, machine_name: str) -> Seen:
    """``pao list --json`` on one machine, within its deadline."""
    started = time.monotonic()
    try:
        machine = resolve(config, machine_name)
        data = call(config, machine, ["list", "--json"], timeout=machine.options.deadline)
    except PaoError as exc:
        return Seen({}, str(exc), time.monotonic() - started)
    agents = {str(agent.get("name")): agent for agent in data.get("agents") or [] if isinstance(agent, dict)}
    return Seen(agents, None, time.monotonic() - started)


def ask_all(config: PaoConfig, machines: set[str]) -> dict[str, Seen]:
    """Every machine at once; the slowest costs its own deadline, not the sum."""
    if not machines:
        return {}
    with ThreadPoolExecutor(max_workers=min(16, len(machines))) as pool:
        return dict(zip(machines, pool.map(lambda name: ask(config, name), machines)))


def remote_rows(config: PaoConfig, records: Sequence[AgentRecord]) -> tuple[dict[str, dict[str, Any]], dict[str, Seen]]:
    """The rows of ``records`` on other machines, each as its machine says now (by name), and each machine's answer."""
    elsewhere = [record for record in records if not runs_here(record, config)]
    answers = ask_all(config, {machine_of(record) for record in elsewhere})
    return {record.name: _remote_row(record, answers[machine_of(record)]) for record in elsewhere}, answers


def list_all(args: argparse.Namespace, config: PaoConfig, agents: Agents, records: list[AgentRecord]) -> int:
    """``records`` (some on other machines): those here observed here, the others asked of their machines."""
    with ThreadPoolExecutor(max_workers=1) as local:
        here = local.submit(lambda: {r.name: agents.observe(r, with_screen=False) for r in records
                                     if runs_here(r, config)})
        remote, answers = remote_rows(config, records)
        observed: dict[str, Observation] = here.result()
    rows = [{**record_json(record, observed[record.name]), "machine": machine_of(record)}
            if record.name in observed else remote[record.name] for record in records]
    if args.json:
        print_json({"agents": rows, "machines": {name: {"reachable": seen.error is None, "error": seen.error,
                                                         "ms": round(seen.seconds * 1000, 1)}
                                                  for name, seen in answers.items()}})
        return 0
    table = []
    for row, record in zip(rows, records):
        state = row["observed"]["state"]
        if state == "blocked" and row["observed"].get("reason"):
            state += f" ({row['observed']['reason']})"
        table.append([record.name, state, row["machine"] or "-", record.host, age_text(record.created_at), row["folder"]])
    print_table(["NAME", "STATE", "MACHINE", "HOST", "AGE", "FOLDER"], table)
    for name, seen in sorted(answers.items()):
        if seen.error:
            print(f"pao: {seen.error}", file=sys.stderr)
    return 0


def _remote_row(record: AgentRecord, seen: Seen) -> dict[str, Any]:
    """A remote agent's row: what its machine says now, or ``unreachable`` with the reason."""
    row = {**record_json(record), "machine": machine_of(record)}
    if seen.error is not None:
        row["observed"] = {"state": "unreachable", "reason": seen.error}
        row["state_source"] = "machine"
        return row
    remote = seen.agents.get(record.name)
    if remote is None:
        row["observed"] = {"state": "dead", "reason": f"machine {machine_of(record)} no longer lists it"}
        row["state_source"] = "machine"
        return row
    for key in ("observed", "state_source", "delivery", "state", "target", "pid", "session_id"):
        if key in remote:
            row[key] = remote[key]
    return row
