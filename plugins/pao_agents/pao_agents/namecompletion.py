"""Shell completion of agent names (``pao kill <TAB>``): argcomplete calls :func:`agent_names` at each TAB.

Completion must answer at once and never disturb the shell: it reads this machine's ``agents.json`` (no tmux, no
screen) and, when ``[registry] url`` names another store (PostgreSQL, shared by several machines), that store's
names too, within :data:`SHARED_DEADLINE`; whatever fails or is late offers nothing. Kept apart from the registry so
the commands' parsers attach it without importing more at start-up.
"""

from __future__ import annotations

import argparse
from typing import Any

SHARED_DEADLINE = 1.0
"""Seconds a TAB waits for the configured registry's names: configuration, plugins and the answer (abandoned past
it)."""


def agent_names(prefix: str, **_: Any) -> list[str]:
    """The names in the file registry and the configured shared one starting with ``prefix``; none of a registry
    that fails (a TAB prints no traceback) or, for the shared one, does not answer in time."""
    names = _file_names() | _shared_names()
    return sorted(name for name in names if name.startswith(prefix))


def _file_names() -> set[str]:
    try:
        from pao_agents.spec import JsonRegistry  # only a TAB needs the registry: start-up stays light
        from pao_core.paths import home_path  # platformdirs: loaded on use

        return set(JsonRegistry(home_path()).names())
    except Exception:  # noqa: BLE001 - an unreadable registry completes nothing
        return set()


def _shared_names() -> set[str]:
    try:
        from pao_core.waiting import bounded  # a thread: only a TAB needs it

        return bounded(_names_of_configured_store, SHARED_DEADLINE, name="pao-complete")
    except Exception:  # noqa: BLE001 - unreachable, late or misconfigured: nothing offered
        return set()


def _names_of_configured_store() -> set[str]:
    from pao_agents.spec.options import registry_options  # configuration and plugins: only a TAB needs them
    from pao_core.plugins import load_config

    config = load_config()
    if not registry_options(config).url:  # the file registry: read above
        return set()
    from pao_agents.registry import open_registry  # the store's plugin and its driver: only for a shared registry

    return set(open_registry(config).names())


def completes_agent_names(action: argparse.Action) -> argparse.Action:
    """``action`` (a ``NAME`` argument) with the agent names as its completions."""
    action.completer = agent_names  # type: ignore[attr-defined]  # argcomplete's attribute
    return action
