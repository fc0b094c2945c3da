"""``pao doctor``'s findings about what a spawn needs (``pao_doctor_checks``): each host's CLI (found, its
version, the files its pre-seed edits, consent), each terminal, the agent registry and the agents in it,
and each notification channel ``[notify]`` turns on.

Hosts answer through ``version()``, ``known_versions()``, ``consent_gaps()`` and ``state_files()``, drivers
through ``availability()`` and ``version()``; every call that may block runs under a deadline.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping

from pao_agents.notify_channels import notifier_checks
from pao_agents.spec.options import machine_name, notify_options, spawn_options
from pao_agents.registry import FILENAME as REGISTRY_FILE
from pao_agents.registry import JsonRegistry, open_registry
from pao_agents.spec.calls import host_agents, terminal_drivers
from pao_agents.spec.contracts import default_driver_name, permission_summary
from pao_core.contracts import Check
from pao_core.doctor import VERSION_TIMEOUT, run_all, tilde
from pao_core.errors import PaoError, describe
from pao_agents.spec.errors import RegistryUnavailable
from pao_core.files import lock_is_held
from pao_core.hookspecs import hookimpl
from pao_core.waiting import bounded

if TYPE_CHECKING:
    from pao_agents.spec.contracts import HostAgent, TerminalDriver
    from pao_core.config import PaoConfig
    from pao_core.plugins import Plugins


@hookimpl
def pao_doctor_checks(config: PaoConfig, plugins: Plugins) -> list[Check]:
    """The hosts and terminals (the default one first), the registry and this machine's agents, at once."""
    jobs: list[Callable[[], Iterable[Check]]] = []
    environ = dict(os.environ)
    hosts = host_agents(plugins, config)
    options = spawn_options(config)
    default = options.host or (hosts[0].name if hosts else "")
    for host in sorted(hosts, key=lambda host: host.name != default):
        jobs.append(lambda host=host: check_host(host, default=host.name == default, environ=environ))
    drivers = terminal_drivers(plugins, config)
    terminal = options.terminal or default_driver_name(drivers)
    for driver in drivers:
        jobs.append(lambda driver=driver: [check_driver(driver, default=driver.name == terminal)])
    jobs.append(lambda: check_registry(config, plugins))
    jobs.append(lambda: notifier_checks(notify_options(config)))
    checks = [check for group in run_all(jobs, VERSION_TIMEOUT + 2) for check in group]
    return checks + missing_defaults(default, {host.name for host in hosts}, terminal, drivers)


def missing_defaults(host: str, hosts: set[str], terminal: str, drivers: list[TerminalDriver]) -> list[Check]:
    """The default host or terminal that no installed plugin provides."""
    missing = []
    if host not in hosts:
        line = f"default host {host!r}: no plugin provides it" if host else "no host agent is installed"
        missing.append(Check("host", host, "fail", line,
                             "install its plugin, or set [spawn] host in the config"))
    if terminal not in {driver.name for driver in drivers}:
        line = f"default terminal {terminal!r}: no plugin provides it" if terminal else "no terminal driver is installed"
        missing.append(Check("terminal", terminal, "fail", line,
                             "install a terminal driver plugin, or set [spawn] terminal in the config"))
    return missing


@hookimpl
def pao_plugin_report(plugin: str, hooks: list[str], config: PaoConfig, plugins: Plugins) -> dict[str, Any] | None:
    """The terminal drivers a plugin provides, each available here or why not (``pao plugins``)."""
    if "pao_terminal_drivers" not in hooks:
        return None
    drivers = [_availability(driver) for driver in plugins.collect("pao_terminal_drivers", only=plugin, config=config)]
    lines = [f"terminal driver {driver['name']}: " + ("available" if driver["available"] else
                                                       f"unavailable: {driver['reason']}") for driver in drivers]
    return {"terminal_drivers": drivers, "lines": lines}


def _availability(driver: TerminalDriver) -> dict[str, Any]:
    try:
        reason = driver.availability()
    except Exception as exc:  # availability checks must not break the listing
        reason = f"availability check failed: {describe(exc)}"
    return {"name": driver.name, "available": reason is None, "reason": reason}


def check_registry(config: PaoConfig, plugins: Plugins) -> list[Check]:
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
        line = describe(exc) if isinstance(exc, RegistryUnavailable) else f"registry {registry.location()}: {describe(exc)}"
        checks.insert(0, Check("registry", label, "fail", line, fix))
        return checks
    where = registry.location() + (" (not created yet)" if json_file and not json_file.path.exists() else "")
    checks.insert(0, Check("registry", label, "ok", f"registry {where}: {len(records)} agents",
                           data={"agents": len(records)}))
    drivers = {driver.name: driver for driver in terminal_drivers(plugins, config)}
    here = machine_name(config)
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


def _numbers(version: str) -> tuple[int, ...] | None:
    head = version.split("-")[0].split("+")[0].split(".")
    return tuple(map(int, head)) if len(head) == 3 and all(part.isdigit() for part in head) else None


def treated_as(version: str, known: Iterable[str]) -> str:
    """How pao treats a CLI version it was not measured against: as the newest version it knows when newer, by what
    it knows of the versions up to it otherwise (its version gates say "this version or newer"), and, when the
    version cannot be read, with what every version takes."""
    ours, measured = _numbers(version), sorted((_numbers(k), k) for k in known if _numbers(k) is not None)
    if ours is None:
        return "pao cannot read this version and uses only what every version it knows takes"
    older = [name for numbers, name in measured if numbers < ours]
    if not older:
        return f"it is older than all of them: pao treats it as the oldest, {measured[0][1]}" if measured else ""
    if older[-1] == measured[-1][1]:
        return f"it is newer: pao treats it as the newest it knows, {older[-1]}"
    return f"pao applies what it knows of versions up to this one (the nearest measured: {older[-1]})"


def check_host(host: HostAgent, *, default: bool, environ: Mapping[str, str]) -> list[Check]:
    """The CLI found and its version known; the files its pre-seed edits parse; consent given."""
    needed = "fail" if default else "warn"
    use = "the default host" if default else f"needed only for --host {host.name}"
    try:
        version = bounded(host.version, VERSION_TIMEOUT)
    except Exception:  # a CLI that cannot report its version is treated as not runnable
        version = None
    checks: list[Check] = []
    mode = host.permission_mode()
    line = f"{host.name} permission mode: {mode} ({permission_summary(mode)})"
    checks.append(Check("host", f"{host.name}:permission-mode", "ok", line, data={"permission_mode": mode}))
    if version is None:
        fix = _host_install_hint(host)
        checks.append(Check("host", host.name, needed, f"{host.name} ({use}): not found or does not run", fix))
        return checks
    known = tuple(host.known_versions())
    data = {"version": version, "known_versions": list(known)}
    if not known or version in known:
        checks.append(Check("host", host.name, "ok", f"{host.name} {version} ({use}); pao knows its screens", data=data))
    else:
        line = f"{host.name} {version} ({use}): pao was measured against {', '.join(known)}, not this version; {treated_as(version, known)}"
        fix = f"readiness detection may misread its screens; install one of {', '.join(known)} if a spawn hangs"
        checks.append(Check("host", host.name, "warn", line, fix, data))
    for path, problem in host.state_files():
        label = tilde(path)
        if problem:
            checks.append(Check("host-file", f"{host.name}:{label}", needed, f"{label}: {problem}",
                                f"fix or move {label}; pao never overwrites a file it cannot parse"))
        else:
            exists = os.path.exists(path)
            line = f"{label}: parses" if exists else f"{label}: not there yet (pao creates it)"
            checks.append(Check("host-file", f"{host.name}:{label}", "ok", line))
    for gap in host.consent_gaps(environ):
        checks.append(Check("host-consent", host.name, needed, f"{host.name}: {gap}",
                            "do it once yourself; pao never answers for you"))
    return checks


def _host_install_hint(host: HostAgent) -> str:
    try:
        host.command(_probe_request(host.name))
    except Exception as exc:  # the profile's own words on what is missing
        return describe(exc)
    return f"check that `{host.name}`'s command runs (set [hosts.{host.name}] command)"


def _probe_request(host: str) -> Any:
    from pao_agents.spec.records import SpawnRequest  # records: only this path needs them (pao_core loads them lazily)

    return SpawnRequest("doctor", os.getcwd(), "doctor", host)




def check_driver(driver: TerminalDriver, *, default: bool) -> Check:
    use = "the default terminal" if default else f"needed only for --terminal {driver.name}"
    try:
        reason = bounded(driver.availability, VERSION_TIMEOUT)
    except Exception as exc:
        reason = f"availability check failed: {describe(exc)}"
    if reason:
        if default:
            fix = "make it available, or set [spawn] terminal in the config"
        else:
            fix = f"nothing, unless you use --terminal {driver.name}"
        line = f"{driver.name} ({use}): not available: {reason}"
        return Check("terminal", driver.name, "fail" if default else "warn", line, fix)
    try:
        version = bounded(driver.version, VERSION_TIMEOUT)
    except Exception:  # a version is only shown; its absence is no finding
        version = None
    shown = f"{driver.name} {version}" if version else driver.name
    return Check("terminal", driver.name, "ok", f"{shown} ({use}): available", data={"version": version})
