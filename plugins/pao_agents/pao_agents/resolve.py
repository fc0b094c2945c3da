"""What spawn and the later commands share: the agents' context (names to objects, the state record), an
agent's environment, and cleaning up what pao wrote for one."""

from __future__ import annotations

import contextlib
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping

import attrs

from pao_agents.spec.calls import agent_state_changed, host_agents, readiness_detectors, terminal_drivers
from pao_agents import agentdir
from pao_agents.readiness import ScreenReader
from pao_agents.registry import open_registry
from pao_agents.spec.contracts import default_driver_name
from pao_core.errors import ValidationError
from pao_core.files import atomic_write
from pao_agents.spec.records import AgentRecord
from pao_core.topic import shown as quoted

if TYPE_CHECKING:
    from typing import Self

    from pao_core.config import PaoConfig
    from pao_agents.spec.contracts import HostAgent, RegistryStore, TerminalDriver
    from pao_core.plugins import Plugins


def first_named(objects: list[Any], name: str, what: str) -> Any:
    """The first object called ``name`` (the first registered wins), or a one-line error."""
    for candidate in objects:
        if candidate.name == name:
            return candidate
    known = ", ".join(sorted({o.name for o in objects})) or "none installed"
    raise ValidationError(f"unknown {what} {quoted(name)} (known: {known})")


_PAO_CREDENTIAL = re.compile(r"PAO_\w*(?:URL|TOKEN|SECRET|PASSWORD|PASSWD|KEY|CREDENTIALS?|DSN)\w*")
"""pao's own credentials (PAO_POSTGRES_URL, PAO_HISTORY_TOKEN...): never in an agent's environment."""


def agent_environment(base: Mapping[str, str], changes: Mapping[str, str | None]) -> dict[str, str]:
    """``base`` without pao's credentials, with a host's ``changes`` applied: a value sets a
    variable, ``None`` removes it. Every agent pao starts or resumes gets its environment here."""
    env = {key: value for key, value in base.items() if not _PAO_CREDENTIAL.fullmatch(key)}
    for key, value in changes.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


@attrs.define
class AgentContext:
    """What spawn and the later commands share: the configuration, the plugins and the registry; names
    to hosts, terminals and screen readers; and the one place an agent's recorded state changes."""

    config: PaoConfig
    plugins: Plugins
    registry: RegistryStore

    @classmethod
    def open(cls, config: PaoConfig, plugins: Plugins | None = None) -> Self:
        from pao_core.plugins import get_plugins  # pluggy, entry points: loaded on use

        plugins = plugins or get_plugins()
        return cls(config, plugins, open_registry(config, plugins))

    # -- resolution --------------------------------------------------------------

    def host(self, name: str) -> HostAgent:
        """The host agent called ``name``; ``""``: the first one, in call order ([spawn] host's default)."""
        hosts = host_agents(self.plugins, self.config)
        return first_named(hosts, name or (hosts[0].name if hosts else ""), "host agent")

    def driver(self, name: str) -> TerminalDriver:
        """The driver called ``name``; ``""``: the first one available here, in call order."""
        drivers = terminal_drivers(self.plugins, self.config)
        return first_named(drivers, name or default_driver_name(drivers), "terminal")

    def reader(self, host: str) -> ScreenReader:
        return ScreenReader.for_host(host, readiness_detectors(self.plugins, self.config), self.plugins)

    def set_state(self, name: str, state: str | Callable[[AgentRecord], str], *, source: str,
                  expected: str | None = None, **changes: Any) -> AgentRecord:
        """The one place an agent's recorded state changes; fires ``pao_agent_state_changed`` when it did.
        With ``expected``, only while the stored state still is that one (checked under the registry's lock).
        ``state`` may be a function of the stored record, called under the lock (the CLI's newest event)."""
        old: list[str] = []

        def edit(previous: AgentRecord) -> AgentRecord:
            old.append(previous.state)
            if expected is not None and previous.state != expected:
                return previous
            new = state(previous) if callable(state) else state
            record = previous if callable(state) and new == previous.state and not changes else \
                previous.changed(state=new, **changes)
            remember_state(record)  # even unchanged: another pao process may have recorded it first
            return record

        record = self.registry.change(name, edit)
        if old[-1] != record.state:
            from pao_agents.notify import register_notifier  # loaded on use, not at start-up

            register_notifier(self.plugins, self.config)
            agent_state_changed(self.plugins, record, old[-1], record.state, source)
        return record


def remember_state(record: AgentRecord) -> None:
    """Write the agent's ``state`` file (hook agents of this machine only; a hint, so failing costs nothing)."""
    agent_dir = record.extra.get("agent_dir")
    if not record.extra.get("events") or not agent_dir or not os.path.isdir(agent_dir):
        return
    with contextlib.suppress(OSError):
        atomic_write(Path(agent_dir, agentdir.STATE_FILE), record.state + "\n", mode=0o600)


def cleanup_written(config: PaoConfig, name: str, extra: Mapping[str, Any], others: list[AgentRecord] = ()) -> None:
    """Remove what pao wrote for one agent: its private folder; for the file channel, the briefing
    file and the context block, unless another agent still uses the same ones."""
    agentdir.remove_agent_dir(config.home, name)
    briefing_file = extra.get("briefing_file")
    if extra.get("delivery") != "file" or not briefing_file:
        return
    if any(other.extra.get("briefing_file") == briefing_file for other in others):
        return
    from pao_agents.delivery import undeliver  # loaded on use, not at start-up

    folder = os.path.dirname(briefing_file)
    undeliver(folder, briefing_file, extra["context_file"], config, created=bool(extra.get("context_created")))
