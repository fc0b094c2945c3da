"""The agent side's option tables: ``[spawn]``, ``[notify]``, ``[machine]`` and ``[registry]``.

pao-agents declares them (``pao_config_tables``, so pao validates them when it loads the configuration)
and each is read with its function here (``spawn_options(config).ready_timeout``).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Literal

import attrs

from pao_core.config import positive
from pao_core.paths import host_name

if TYPE_CHECKING:
    from pao_core.config import PaoConfig


@attrs.frozen
class SpawnOptions:
    """``[spawn]``: the default host (``""``: the first host agent, in call order) and terminal (``""``: the
    first terminal driver available here)."""

    host: str = ""
    terminal: str = ""
    nudge: bool = True
    ready_timeout: float = attrs.field(default=45.0, validator=positive)
    delivery: Literal["session", "file"] = "session"
    """``session``: the host CLI's own per-session channel where it has one; ``file``: CONTEXT_BRIEFING.md in the folder."""


NOTIFY_STATES = ("waiting", "blocked", "dead", "finished", "failed", "ready", "busy", "starting", "paused")


def _known_states(instance: object, attribute: attrs.Attribute, value: tuple[str, ...]) -> None:
    unknown = [state for state in value if state not in NOTIFY_STATES]
    if unknown:
        raise ValueError(f"{attribute.name}: {', '.join(map(repr, unknown))} not among {', '.join(NOTIFY_STATES)}")


@attrs.frozen
class NotifyOptions:
    """``[notify]``: desktop notifications when an agent enters one of ``states`` (off unless ``desktop = true``)."""

    desktop: bool = False
    states: tuple[str, ...] = attrs.field(default=("waiting", "blocked", "dead", "finished", "failed"),
                                          validator=_known_states)


MACHINE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,62}")


def _machine_name(instance: object, attribute: attrs.Attribute, value: str) -> None:
    if value and not MACHINE_NAME.fullmatch(value):
        raise ValueError(f"{attribute.name}: letters, digits, '.', '_' and '-' (up to 63, not {value!r})")


def _registry_url(instance: object, attribute: attrs.Attribute, value: str) -> None:
    if value and "://" not in value:  # never echoed: "user:password@host" without a scheme cannot be masked
        raise ValueError(f"{attribute.name}: must be a URL such as postgresql://user@host:5432/db")


@attrs.frozen
class MachineOptions:
    """``[machine]``: this machine's name in the registry (default: the short host name)."""

    name: str = attrs.field(default="", validator=_machine_name)


@attrs.frozen
class RegistryOptions:
    """``[registry]``: where the agent registry is kept (``""``: ``agents.json`` under ``PAO_HOME``)."""

    url: str = attrs.field(default="", validator=_registry_url)


def spawn_options(config: PaoConfig) -> SpawnOptions:
    return config.options("spawn", "", SpawnOptions)


def notify_options(config: PaoConfig) -> NotifyOptions:
    return config.options("notify", "", NotifyOptions)


def registry_options(config: PaoConfig) -> RegistryOptions:
    return config.options("registry", "", RegistryOptions)


def machine_name(config: PaoConfig) -> str:
    """This machine's name: ``[machine] name``, else the short host name."""
    return config.options("machine", "", MachineOptions).name or host_name()


def with_spawn(config: PaoConfig, **changes: Any) -> PaoConfig:
    """``config`` with ``[spawn]`` keys changed (a command's options over the file's)."""
    return attrs.evolve(config, tables={**config.tables, "spawn": {**config.tables.get("spawn", {}), **changes}})
