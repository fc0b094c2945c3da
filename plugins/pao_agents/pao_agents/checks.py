"""``pao doctor``'s findings about the agent registry and the agents in it (``pao_doctor_checks``)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from pao_agents.registry import FILENAME as REGISTRY_FILE
from pao_agents.registry import JsonRegistry, open_registry
from pao_core.contracts import Check
from pao_core.errors import PaoError, describe
from pao_core.files import lock_is_held
from pao_core.hookspecs import hookimpl
from pao_core.waiting import bounded

if TYPE_CHECKING:
    from pao_core.config import PaoConfig
    from pao_core.plugins import Plugins


@hookimpl
def pao_doctor_checks(config: PaoConfig, plugins: Plugins) -> list[Check]:
    """The registry (readable, its lock) and each of this machine's agents (does its process still run)."""
    fix_url = "start the registry server, or fix [registry] url (PAO_REGISTRY_URL)"
    try:
        registry = open_registry(config, plugins)
    except PaoError as exc:
        return [Check("registry", "registry", "fail", describe(exc), fix_url)]
    json_file = registry if isinstance(registry, JsonRegistry) else None
    label = "agents.json" if json_file else registry.name
    checks = [_check_lock(json_file.path.with_name(REGISTRY_FILE + ".lock"))] if json_file else []
    try:
        records = registry.list()
    except Exception as exc:
        fix = "fix or move the file; pao will not overwrite it" if json_file else fix_url
        checks.insert(0, Check("registry", label, "fail", f"registry {registry.location()}: {describe(exc)}", fix))
        return checks
    where = registry.location() + (" (not created yet)" if json_file and not json_file.path.exists() else "")
    checks.insert(0, Check("registry", label, "ok", f"registry {where}: {len(records)} agents",
                           data={"agents": len(records)}))
    drivers = {driver.name: driver for driver in plugins.terminal_drivers(config)}
    here = config.machine_name()
    for record in records:
        if record.state == "paused" or record.machine != here:  # another machine's agent: not visible from here
            continue
        driver = drivers.get(record.terminal)
        if driver is None:
            checks.append(Check("agent", record.name, "warn", f"agent {record.name}: its terminal {record.terminal!r} "
                                "is not installed, cannot tell whether it runs", f"pao kill {record.name} forgets it"))
            continue
        try:
            alive = bool(record.target) and bounded(lambda: driver.is_alive(record.target), 5.0)
        except Exception as exc:
            checks.append(Check("agent", record.name, "warn", f"agent {record.name}: cannot look: {describe(exc)}"))
            continue
        if not alive:
            line = f"agent {record.name} ({record.folder}): its process is gone"
            checks.append(Check("agent", record.name, "warn", line,
                                f"`pao resume {record.name}` relaunches it, `pao kill {record.name}` forgets it"))
    return checks


def _check_lock(lock: Path) -> Check:
    if lock_is_held(lock):
        return Check("registry", "lock", "ok", "registry lock: held right now by a pao process (the kernel frees it if "
                     "that process dies)")
    return Check("registry", "lock", "ok", "registry lock: free")
