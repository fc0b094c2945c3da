"""What the monitor shows of each agent: its observation, machine, age and last event."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from pao_agents.spec import machine_name
from pao_agents.spec import EVENTS, read_events
from pao_agents.spec import age_text, topic_cell
from pao_core.output import print_table
from pao_core.sanitize import strip_controls

if TYPE_CHECKING:
    from pao_agents.spec import Agents, Observation

COLUMNS = ("NAME", "MACHINE", "HOST", "STATE", "AGE", "LAST EVENT", "TOPIC", "FOLDER")


@attrs.frozen
class Row:
    observation: Observation
    machine: str
    last_event: str | None

    def cells(self) -> tuple[str, ...]:
        record, seen = self.observation.record, self.observation
        state = seen.state + (f" ({seen.reason})" if seen.reason and seen.state in ("blocked", "unknown") else "")
        return (record.name, self.machine, record.host, state, age_text(record.created_at), self.last_event or "-",
                topic_cell(record.topic), record.folder)


def observe_all(agents: Agents) -> list[Row]:
    """Look at every agent now (and record what changed); oldest first. An agent on another machine
    is as ``pao list`` shows it: asked of its machine through the command routers (pao-machines)."""
    from pao_agents.spec import Observation  # loaded with the agents already

    records, config = agents.registry.list(), agents.config
    elsewhere = [record for record in records if not agents.runs_here(record)]
    answered: dict[str, dict[str, Any]] = {}
    for router in agents.plugins.command_routers(config) if elsewhere else ():
        answered.update(router.observe(elsewhere, config))
    rows = []
    for record in records:
        if record.name in answered:
            seen = answered[record.name].get("observed") or {}
            reason = strip_controls(str(seen["reason"])) if seen.get("reason") else None  # another machine's words
            observation = Observation(record, strip_controls(str(seen.get("state") or "unknown")), reason,
                                      source=str(answered[record.name].get("state_source") or "machine"))
            event = None  # its log is on its machine
        else:
            observation = agents.observe(record)
            agents.refresh(observation)
            folder = record.extra.get("agent_dir") or Path(config.home) / "agents" / record.name
            event = last_event(Path(folder) / EVENTS)
        rows.append(Row(observation, record.machine or machine_name(config), strip_controls(event) if event else None))
    return rows


def last_event(log: Path) -> str | None:
    """``"Stop 12s ago"`` from the newest event in an agent's log (the CLI's hooks), if it has one."""
    events = read_events(log)
    if not events:
        return None
    return f"{events[-1]['name']} {age_text(dt.datetime.fromtimestamp(events[-1]['at'], dt.timezone.utc))} ago"


def print_rows(rows: list[Row]) -> None:
    print_table(list(COLUMNS), [list(row.cells()) for row in rows] or [["(no agents)"] + [""] * (len(COLUMNS) - 1)])
