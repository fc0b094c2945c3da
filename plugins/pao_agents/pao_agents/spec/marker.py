"""The marker of the agent hooks' implementations: pao's own, with the implementation optional.

pao-agents adds these hooks (``pao_addhooks``); when it is disabled or not installed a plugin that
implements them still loads, as pytest asks of a plugin implementing another plugin's hooks.
"""

from __future__ import annotations

from typing import Any

from pao_core.hookspecs import hookimpl as _core_hookimpl


def hookimpl(function: Any = None, **options: Any) -> Any:
    """``@hookimpl`` or ``@hookimpl(tryfirst=True, ...)`` for an agent hook, marked ``optionalhook``."""
    return _core_hookimpl(function, optionalhook=True, **options)
