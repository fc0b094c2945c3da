"""``pao machine check TARGET``: what ``spawn --on`` needs there, checked one step at a time."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from pao_core.errors import PaoError

from pao_machines.remote import call
from pao_machines.ssh import Ssh
from pao_machines.targets import resolve

if TYPE_CHECKING:
    from pao_core.config import PaoConfig

WORDS = ["two words", "it's \"quoted\"", "trailing\\", "!$`*~", "a\nb\tc", "ü ✓", "-x"]
"""What shells read differently (quotes, a trailing backslash, ``!``, newlines...): sent, echoed, compared."""


def check(config: PaoConfig, target: str) -> dict[str, Any]:
    """Connect (a new multiplexed connection), ask the remote pao for its versions twice, then send it words
    that login shells read differently and compare what it got."""
    machine = resolve(config, target)
    lines = [f"machine {machine.name}: {machine.destination}, pao command {machine.options.pao!r}"]
    report: dict[str, Any] = {"machine": machine.name, "ok": False, "lines": lines}
    ssh = Ssh(config.home)
    ssh.close(machine)  # measure a fresh connection, then a multiplexed one
    timings = []
    try:
        for _ in range(2):
            started = time.monotonic()
            version = call(config, machine, ["machine", "version", "--json"], timeout=machine.options.deadline + 30)
            timings.append(time.monotonic() - started)
        report.update(remote=version, first_ms=round(timings[0] * 1000, 1), again_ms=round(timings[1] * 1000, 1))
        lines.append(f"ssh + pao {version.get('pao')}: first call {timings[0] * 1000:.0f} ms (new connection), "
                     f"then {timings[1] * 1000:.0f} ms (multiplexed)")
        echoed = call(config, machine, ["machine", "echo", "--", *WORDS], timeout=machine.options.deadline + 30)
        if echoed.get("words") != WORDS:
            raise PaoError(f"words arrive changed there: sent {WORDS!r}, got {echoed.get('words')!r}")
    except PaoError as exc:
        lines.append(f"FAILED: {exc}")
        report["error"] = str(exc)
        return report
    report["ok"] = True
    lines.append("  words: arrive intact through its login shell")
    for name, found in sorted((version.get("hosts") or {}).items()):
        lines.append(f"  host {name}: {found or 'not found'}")
    lines.append(f"  terminal tmux: {version.get('tmux') or 'not found'}")
    return report
