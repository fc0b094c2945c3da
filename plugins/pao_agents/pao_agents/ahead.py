"""What ``pao spawn`` starts before it reads its configuration: two helper processes (the spawn parser's ``light``).

Most of a spawn's time is spent importing: the plugin host and the configuration in pao's
own process, numpy and the sentence model for the briefing, libtmux for the window. The
second core is idle while pao loads its configuration, so the ``pao spawn`` command forks
two helpers from the plugin index alone (:func:`pao_agents.forked.helper`), and each warms
up at once (the ``pao_warm_up`` hook): ``briefing`` (it gathers and composes the briefing,
with numpy loaded) and ``terminal`` (it opens the agent's window and waits until the agent
is ready, with libtmux loaded). :func:`pao_agents.spawn.spawn` sends each its work once the
request is valid: nothing is written, no window opens and no agent starts before.

Only the ``pao`` command's own process has helpers (a library caller's ``spawn`` forks at
most its gatherer), and not for ``--help``, ``--on`` or ``--briefing-stdin``. A helper
that is gone or late costs time only: its work is then done as it would be without it.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from pao_agents import forked

if TYPE_CHECKING:
    from pao_agents.readiness import Ready, ScreenReader
    from pao_core.config import PaoConfig
    from pao_core.contracts import TerminalDriver
    from pao_core.models import Briefing

PURPOSES = ("briefing", "terminal")
NOT_HERE = ("-h", "--help", "--on", "--briefing-stdin")
"""Arguments after which the helpers would not be used (the command prints help, or runs elsewhere)."""

_helpers: dict[str, forked.Helper] = {}


def before_spawn(argv: Sequence[str], index: Mapping[str, Any]) -> None:
    """Start the helpers of ``pao spawn ARGS`` (the command then goes on as usual: this returns ``None``)."""
    import gc  # the pao command's own process only

    gc.disable()  # a spawn's objects live as long as it does: collecting them while it imports costs ~15 ms
    if any(arg.split("=", 1)[0] in NOT_HERE for arg in argv):
        return None
    import pao_core.config  # noqa: F401  (as below: the helpers read the configuration and records they are sent)
    import pao_core.models  # noqa: F401  (as below)
    from pao_core.plugins import get_plugins  # what the command loads next: forked now, the helpers share it

    get_plugins(dict(index))  # type: ignore[arg-type]
    for purpose in PURPOSES:
        started = forked.helper(functools.partial(_warm_up, purpose))
        if started is not None:
            _helpers[purpose] = started
    return None


def _warm_up(purpose: str) -> None:
    from pao_core.plugins import get_plugins  # loaded: the helper was forked after it

    plugins = get_plugins()
    plugins.load("pao_warm_up")
    plugins.manager.hook.pao_warm_up(purpose=purpose)


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


def open_window(driver: TerminalDriver, name: str, folder: str, argv: list[str]) -> str:
    """The agent's window, opened by the ``terminal`` helper; its target."""
    return driver.spawn(name, folder, argv, {})


def await_ready(driver: TerminalDriver, target: str, reader: ScreenReader, timeout: float, name: str,
                busy: bool) -> tuple[Ready, int | None]:
    """Step 7 in the ``terminal`` helper: the agent ready (what ``wait_ready`` raises is raised), and its pid."""
    from pao_agents.readiness import wait_ready  # imported in the helper

    ready = wait_ready(driver, target, reader, timeout, name=name, busy=busy)
    return ready, driver.pid(target)
