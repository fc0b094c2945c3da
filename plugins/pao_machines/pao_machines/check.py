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


def check(config: PaoConfig, target: str) -> dict[str, Any]:
    """Connect (a new multiplexed connection), then ask the remote pao for its doctor report twice."""
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
    except PaoError as exc:
        lines.append(f"FAILED: {exc}")
        report["error"] = str(exc)
        return report
    report.update(ok=True, remote=version, first_ms=round(timings[0] * 1000, 1), again_ms=round(timings[1] * 1000, 1))
    lines.append(f"ssh + pao {version.get('pao')}: first call {timings[0] * 1000:.0f} ms (new connection), "
                 f"then {timings[1] * 1000:.0f} ms (multiplexed)")
    for name, found in sorted((version.get("hosts") or {}).items()):
        lines.append(f"  host {name}: {found or 'not found'}")
    lines.append(f"  terminal tmux: {version.get('tmux') or 'not found'}")
    return report
