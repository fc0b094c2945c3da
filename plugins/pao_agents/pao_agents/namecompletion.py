"""Shell completion of agent names (``pao kill <TAB>``): argcomplete calls :func:`agent_names` at each TAB.

Completion must answer at once and never disturb the shell, so it reads only this machine's ``agents.json``
(no PostgreSQL, no tmux, no screen) and offers nothing when that fails. Kept apart from the registry so the
commands' parsers attach it without importing more at start-up.
"""

from __future__ import annotations

import argparse
from typing import Any


def agent_names(prefix: str, **_: Any) -> list[str]:
    """The names in the file registry starting with ``prefix``; none on any error (a TAB prints no traceback)."""
    try:
        from pao_agents.spec import JsonRegistry  # only a TAB needs the registry: start-up stays light
        from pao_core.paths import home_path  # platformdirs: loaded on use

        return sorted(name for name in JsonRegistry(home_path()).names() if name.startswith(prefix))
    except Exception:  # noqa: BLE001 - an unreadable registry completes nothing
        return []


def completes_agent_names(action: argparse.Action) -> argparse.Action:
    """``action`` (a ``NAME`` argument) with the agent names as its completions."""
    action.completer = agent_names  # type: ignore[attr-defined]  # argcomplete's attribute
    return action
