"""Reading an agent's screen: combined detector verdicts, readiness polling, screen waits.

The first tenth of a second of a wait is polled every ``FAST_POLL`` (an agent that is
about to draw its prompt, a paste about to land, is seen at once); whether the agent's
process still runs is asked only after it (a screen that says the agent died is seen at once). Then polls back off
while the screen stands still: the next poll comes after a twentieth of the time the
screen has been unchanged, at least ``FIRST_POLL`` and at most ``MAX_POLL``. A screen
that just changed is read again within tens of milliseconds (start-up is drawing; the
ready prompt is near), a screen frozen for twenty seconds once a second.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Callable, Sequence

import attrs

from pao_core.errors import PaoError
from pao_agents.spec.records import ScreenVerdict

if TYPE_CHECKING:
    from pao_agents.spec.contracts import ReadinessDetector, TerminalDriver
    from pao_core.plugins import Plugins

FIRST_POLL = 0.02
MAX_POLL = 1.0
FAST_POLL = 0.005
FAST_FOR = 0.1

# Combination order: any blocked wins, then failed (an API error, a retried request), dead (a detector that sees the
# process gone), busy, waiting, ready.
_PRECEDENCE = ("blocked", "failed", "dead", "busy", "waiting", "ready")


class AgentBlocked(PaoError):
    """The agent's screen shows something only the user can answer (a dialog, a login)."""


class AgentExited(PaoError):
    """The agent's process ended while pao waited for it."""


class ReadyTimeout(PaoError):
    """The agent never showed a ready screen within the deadline."""


@attrs.define
class ScreenReader:
    """The detectors for one host, combined; a detector that raises is reported and skipped."""

    host: str
    detectors: Sequence[ReadinessDetector]
    plugins: Plugins | None = None

    @classmethod
    def for_host(cls, host: str, detectors: Sequence[ReadinessDetector], plugins: Plugins | None = None) -> ScreenReader:
        chosen = [d for d in detectors if not d.hosts or host in d.hosts]
        return cls(host, chosen, plugins)

    def classify(self, screen: str) -> ScreenVerdict:
        verdicts: list[ScreenVerdict] = []
        for detector in self.detectors:
            try:
                verdict = detector.classify(screen)
            except Exception as exc:  # one broken detector must not blind the others
                if self.plugins is not None:
                    self.plugins.record_failure(detector.name, "classify", exc)
                continue
            if verdict is not None:
                verdicts.append(attrs.evolve(verdict, detector=verdict.detector or detector.name))
        for state in _PRECEDENCE:
            for verdict in verdicts:
                if verdict.state == state:
                    return verdict
        return ScreenVerdict("unknown")


@attrs.frozen
class Ready:
    """How readiness was reached."""

    verdict: ScreenVerdict
    screen: str
    elapsed: float
    polls: int


def next_delay(still_for: float) -> float:
    """The pause before the next poll, given how long the screen has stood still."""
    return min(MAX_POLL, max(FIRST_POLL, still_for / 20))


def last_words(screen: str, notices: Sequence[str] = ()) -> str:
    """The last meaningful line of a screen, for one-line error messages; lines starting with a
    ``notices`` text are the terminal's (``TerminalDriver.screen_notices``), not the agent's."""
    lines = [line.strip() for line in screen.splitlines() if line.strip() and not line.startswith(tuple(notices))]
    return lines[-1][:200] if lines else "(empty screen)"


def wait_for(
    driver: TerminalDriver,
    target: str,
    accept: Callable[[str], bool],
    timeout: float,
    *,
    clock: Callable[[], float] = time.monotonic,
) -> str | None:
    """Read the screen until ``accept(screen)``; return that screen, or ``None`` at the deadline."""
    started = clock()
    deadline = started + timeout
    previous, changed_at = None, started
    while True:
        screen = driver.read(target)
        if accept(screen):
            return screen
        now = clock()
        if screen != previous:
            previous, changed_at = screen, now
        if now >= deadline:
            return None
        delay = FAST_POLL if now - started < FAST_FOR else next_delay(now - changed_at)
        time.sleep(min(delay, max(0.0, deadline - now)))


def wait_ready(
    driver: TerminalDriver,
    target: str,
    reader: ScreenReader,
    timeout: float,
    *,
    name: str = "agent",
    busy: bool = False,
    clock: Callable[[], float] = time.monotonic,
) -> Ready:
    """Poll until the screen reads ready (or busy, for a CLI started with a prompt); raise on blocked or exit."""
    accepted = ("ready", "busy") if busy else ("ready",)
    notices = driver.screen_notices
    started = clock()
    seen: list[ScreenVerdict] = []

    previous: list[str] = []

    def accept(screen: str) -> bool:
        verdict = reader.classify(screen)
        seen.append(verdict)
        if verdict.state in ("blocked", "failed", "waiting"):  # waiting: a dialog (trust) only the user answers
            raise AgentBlocked(f"{name} is {verdict.state}: {verdict.reason or last_words(screen, notices)}")
        # a process still drawing is alive: whether it exited is asked only of a screen that stands still, and not
        # in the fast first tenth of a second (a tmux command each: they would slow the agent's own start)
        still = verdict.state == "dead" or (previous == [screen] and clock() - started >= FAST_FOR)
        previous[:] = [screen]
        if verdict.state not in accepted and still and not driver.is_alive(target):
            raise AgentExited(f"{name} exited before it was ready: {last_words(driver.read(target), notices)}")
        return verdict.state in accepted

    screen = wait_for(driver, target, accept, timeout, clock=clock)
    if screen is None:
        last = driver.read(target)
        raise ReadyTimeout(
            f"{name} was not ready after {timeout:.0f} s (screen: {seen[-1].state}; last line: {last_words(last, notices)})"
        )
    return Ready(seen[-1], screen, clock() - started, len(seen))
