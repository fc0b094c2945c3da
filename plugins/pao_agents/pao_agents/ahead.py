"""What ``pao spawn`` starts before it parses its command line: the briefing's helper process (the parser's ``light``).

Most of a spawn's time is spent importing: the plugin host and the configuration in pao's
own process, numpy, the sentence model and the stores for the briefing. So the ``pao
spawn`` command reads its configuration (the plugins' tables known from the plugin index)
and forks a helper (:func:`pao_agents.forked.helper`) that warms up at once on the second
core, while pao builds its parser and checks the request: the ``pao_warm_up`` hook,
purpose ``briefing``, imports the stores' modules, and numpy and the model where a store
embeds the topic in this process. :func:`pao_agents.spawn.spawn` sends it the topic, the
folder and the configuration once they are valid, and the helper gathers and composes the
briefing while pao checks the host and the terminal, reserves the name and opens the window.

(pao brief's vector helper, :mod:`pao_embeddings.ahead`, started before anything else, was
tried for ``pao spawn`` too and dropped: with pao, the briefing's helper and that one
running at once on a loaded two-core machine, a spawn took 40-75 ms longer and ~30 ms more
CPU than with numpy loaded here. A second helper that imported libtmux, opened the window
and waited for the agent was dropped as well: on two cores it took the core the briefing
needed, and it cost about 45 ms more CPU in all than doing that here.)

Only the ``pao`` command's own process has a helper (a library caller's ``spawn`` forks
its gatherer when the request is valid, as without one), and not for ``--help``, ``--on``,
``--briefing-stdin`` or ``--worktree``. A helper that is gone or late costs time only: its
work is then done as it would be without it.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from pao_agents import forked

if TYPE_CHECKING:
    from pao_core.config import PaoConfig
    from pao_core.models import Briefing

PURPOSES = ("briefing",)
NOT_HERE = ("-h", "--help", "--on", "--briefing-stdin", "--worktree")
"""Arguments after which the helpers would not be used (the command prints help, or runs elsewhere)."""

_helpers: dict[str, forked.Helper] = {}


def before_spawn(argv: Sequence[str], index: Mapping[str, Any]) -> None:
    """Start the helper of ``pao spawn ARGS`` (the command then goes on as usual: this returns ``None``)."""
    import gc  # the pao command's own process only

    gc.disable()  # a spawn's objects live as long as it does: collecting them while it imports costs ~15 ms
    if any(arg.split("=", 1)[0] in NOT_HERE for arg in argv):
        return None
    import pao_core.models  # noqa: F401  (as below)
    from pao_core.plugins import load_config  # what the command loads next: done now, the helpers share it
    from pao_core.errors import ConfigError
    from pao_core.plugins import get_plugins  # (as above)

    plugins = get_plugins(dict(index))  # type: ignore[arg-type]
    try:  # the command loads it again, from the converters built here (a few ms), and says what is wrong with it
        config = load_config(tables=plugins.config_tables(), strict_tables=plugins.complete)
    except ConfigError:
        return None  # the command ends at once: no helper
    for purpose in PURPOSES:
        started = forked.helper(functools.partial(_warm_up, purpose, config))
        if started is not None:
            _helpers[purpose] = started
    return None


def _warm_up(purpose: str, config: PaoConfig) -> None:
    from pao_core.plugins import get_plugins  # loaded: the helper was forked after it

    plugins = get_plugins()
    plugins.load("pao_warm_up")
    plugins.manager.hook.pao_warm_up(purpose=purpose, config=config)


def helper(purpose: str) -> forked.Helper | None:
    """This process's helper for ``purpose``, while it runs."""
    found = _helpers.get(purpose)
    return found if found is not None and found.pid is not None else None


def end_helpers() -> None:
    """End and reap the helpers (a spawn's last step, whether it worked or not)."""
    while _helpers:
        _helpers.popitem()[1].cancel()


# -- the work sent to the helpers: module-level functions, so that it pickles -----------------


def gather(topic: str, folder: str, config: PaoConfig) -> Briefing:
    """Steps 2-3 in the ``briefing`` helper, with the plugins it shares with the command."""
    from pao_core.gather import brief  # imported in the helper
    from pao_core.plugins import get_plugins  # (as above)

    return brief(topic, folders=[folder], config=config, plugins=get_plugins())
