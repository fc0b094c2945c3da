"""The agent side's option tables: ``[spawn]``, ``[notify]``, ``[machine]`` and ``[registry]``.

pao-agents declares them (``pao_config_tables``, so pao validates them when it loads the configuration)
and each is read with its function here (``spawn_options(config).ready_timeout``).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Literal

import attrs

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
    ready_timeout: float = attrs.field(default=45.0, validator=attrs.validators.gt(0))
    delivery: Literal["session", "file"] = "session"
    """``session``: the host CLI's own per-session channel where it has one; ``file``: CONTEXT_BRIEFING.md in the folder."""


NOTIFY_STATES = ("finished", "waiting", "failed", "dead", "blocked", "ready", "busy", "starting", "paused")
"""What a notification can be about: an agent's recorded states, and ``finished`` (a turn ended: ready after busy)."""
PLACEHOLDERS = ("{name}", "{state}", "{reason}", "{topic}", "{folder}")
"""What ``[notify] command``'s words may hold; each is replaced inside its word, which stays one argument."""


def _known_states(instance: object, attribute: attrs.Attribute, value: tuple[str, ...]) -> None:
    unknown = [state for state in value if state not in NOTIFY_STATES]
    if unknown:
        raise ValueError(f"{attribute.name}: {', '.join(map(repr, unknown))} not among {', '.join(NOTIFY_STATES)}")


def _argv_template(instance: object, attribute: attrs.Attribute, value: tuple[str, ...]) -> None:
    if value and not value[0].strip():
        raise ValueError(f"{attribute.name}: the first word must name a program")
    unknown = sorted({word for word in re.findall(r"\{[^{}]*\}", " ".join(value)) if word not in PLACEHOLDERS})
    if unknown:
        raise ValueError(f"{attribute.name}: unknown placeholder {', '.join(unknown)} (known: {', '.join(PLACEHOLDERS)})")


def _webhook_url(instance: object, attribute: attrs.Attribute, value: str) -> None:
    if value and not re.fullmatch(r"https?://[^\s/?#]+[^\s]*", value):  # never echoed: the URL is a secret
        raise ValueError(f"{attribute.name}: must be an http(s) URL such as https://ntfy.sh/your-topic")


@attrs.frozen
class NotifyOptions:
    """``[notify]``: when an agent enters one of ``states``, tell the desktop (``desktop = true``), run
    ``command`` (an argv template, no shell) and POST to ``webhook`` (``webhook_style``: ``slack`` or ``ntfy``).
    The same agent and state again within ``collapse`` seconds is one notification."""

    desktop: bool = False
    states: tuple[str, ...] = attrs.field(default=("finished", "waiting", "failed", "dead"), validator=_known_states)
    command: tuple[str, ...] = attrs.field(default=(), validator=_argv_template)
    webhook: str = attrs.field(default="", validator=_webhook_url)
    webhook_style: Literal["slack", "ntfy"] = "slack"
    timeout: float = attrs.field(default=5.0, validator=attrs.validators.gt(0))
    """Seconds each channel may take (the webhook's whole request, the command, the desktop's notifier)."""
    collapse: float = attrs.field(default=60.0, validator=attrs.validators.ge(0))

    @property
    def any_channel(self) -> bool:
        return self.desktop or bool(self.command) or bool(self.webhook)


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
