"""``pao doctor``'s checks: what the next spawn needs, each with a verdict, one line and a fix.

Nothing here knows a particular backend, host or terminal: backends answer through
``health(deadline)``, a test ``search`` and ``local_files()``; hosts through
``version()``, ``known_versions()``, ``consent_gaps()`` and ``state_files()``; drivers
through ``availability()``, ``version()`` and ``is_alive(target)`` for the agents in
the registry (``pao_core.contracts`` gives the optional ones their defaults). Every call
that may block runs on a daemon thread under a deadline, so a hung store or CLI costs its
deadline and nothing more.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Literal, Mapping, Sequence

import attrs

from pao_core.errors import PaoError, RegistryUnavailable, describe
from pao_core.files import lock_is_held
from pao_core.contracts import permission_summary
from pao_core.lifecycle import default_driver_name
from pao_core.registry import FILENAME as REGISTRY_FILE
from pao_core.registry import JsonRegistry, open_registry
from pao_core.waiting import bounded, start

if TYPE_CHECKING:
    from pao_core.config import PaoConfig
    from pao_core.contracts import HostAgent, MemoryBackend, TerminalDriver
    from pao_core.plugins import Plugins

Status = Literal["ok", "warn", "fail"]
AREAS = ("host", "host-file", "host-consent", "terminal", "store", "backend", "registry", "agent", "plugin", "doctor")
"""The order checks are shown in."""

DEFAULT_QUERY = "test"
VERSION_TIMEOUT = 15.0


@attrs.frozen
class Check:
    """One verdict: ``fail`` means the next spawn cannot work as configured."""

    area: str
    name: str
    status: Status
    line: str
    fix: str = ""
    data: Mapping[str, Any] = attrs.field(factory=dict)


@attrs.frozen
class Report:
    checks: tuple[Check, ...]

    @property
    def failed(self) -> bool:
        return any(check.status == "fail" for check in self.checks)

    def as_json(self) -> dict[str, Any]:
        return {"ok": not self.failed, "checks": [attrs.asdict(check) for check in self.checks]}


def _squash(text: str) -> str:
    return " ".join(str(text).split())


def human_size(size: int) -> str:
    value = float(size)
    for unit in ("bytes", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{int(value)} {unit}" if unit == "bytes" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} bytes"


# -- hosts --------------------------------------------------------------------------


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
    if not known or version in known:
        line = f"{host.name} {version} ({use}); pao knows its screens"
        checks.append(Check("host", host.name, "ok", line, data={"version": version, "known_versions": list(known)}))
    else:
        line = f"{host.name} {version} ({use}): pao was measured against {', '.join(known)}, not this version"
        fix = f"readiness detection may misread its screens; install one of {', '.join(known)} if a spawn hangs"
        checks.append(Check("host", host.name, "warn", line, fix, {"version": version, "known_versions": list(known)}))
    for path, problem in host.state_files():
        label = _tilde(path)
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
    from pao_core.models import SpawnRequest  # records: only this path needs them (pao_core loads them lazily)

    return SpawnRequest("doctor", os.getcwd(), "doctor", host)


def _tilde(path: str | os.PathLike[str]) -> str:
    text, home = str(path), os.path.expanduser("~")
    return "~" + text[len(home):] if home != "/" and text.startswith(home + os.sep) else text


# -- terminals ----------------------------------------------------------------------


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


# -- backends -----------------------------------------------------------------------


def check_backend(backend: MemoryBackend, *, query: str, deadline_s: float, limit: int) -> list[Check]:
    """Reachable (health) with its latency, the item count of a test query, its embedded files."""
    name = backend.name
    checks: list[Check] = []
    missing: list[str] = []
    for path in backend.local_files():
        label = _tilde(path)
        try:
            size = os.stat(path).st_size
        except FileNotFoundError:
            missing.append(label)
            continue
        checks.append(Check("store", f"{name}:{label}", "ok", f"{name}: embedded store {label}, {human_size(size)}",
                            data={"path": str(path), "bytes": size}))
    started = time.monotonic()
    try:
        health = bounded(lambda: backend.health(started + deadline_s), deadline_s)
        items = bounded(lambda: backend.search(query, limit, time.monotonic() + deadline_s), deadline_s)
        count = len(list(items))
    except Exception as exc:
        elapsed = (time.monotonic() - started) * 1000
        if missing:  # nothing to reach yet: the store was never created
            return checks + [_not_created(name, missing, describe(exc))]
        line = f"{name}: unreachable after {elapsed:.0f} ms: {describe(exc)}"
        # its files exist but do not work: say so on their lines too, so the report agrees with itself
        checks = [attrs.evolve(check, status="fail", line=f"{check.line}: unusable (see the next line)")
                  for check in checks]
        return checks + [Check("backend", name, "fail", line, _backend_fix(name), {"latency_ms": round(elapsed, 1)})]
    if missing:
        return checks + [_not_created(name, missing, _squash(health))]
    elapsed = (time.monotonic() - started) * 1000
    line = f"{name}: {_squash(health)}; test query {query!r}: {count} items in {elapsed:.0f} ms"
    data = {"latency_ms": round(elapsed, 1), "items": count, "health": health}
    checks.append(Check("backend", name, "ok", line, data=data))
    return checks


def _not_created(name: str, missing: Sequence[str], says: str) -> Check:
    line = f"{name}: embedded store {', '.join(missing)} does not exist yet"
    return Check("store", f"{name}:{missing[0]}", "warn", line,
                 f"the backend says: {says}")


def _backend_fix(name: str) -> str:
    return (f"start the store or fix [backends.{name}] in the config (see `pao config`); "
            f"`enabled = false` there turns it off")


# -- registry and agents ------------------------------------------------------------


def check_registry(config: PaoConfig, plugins: Plugins) -> list[Check]:
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


# -- all of it ----------------------------------------------------------------------


def run_checks(
    config: PaoConfig,
    plugins: Plugins,
    *,
    environ: Mapping[str, str] | None = None,
    query: str = DEFAULT_QUERY,
) -> Report:
    """Every check, the slow ones (CLIs' versions, stores) at once on their own threads."""
    env = dict(os.environ if environ is None else environ)
    jobs: list[Callable[[], Iterable[Check]]] = []
    hosts = sorted(plugins.host_agents(config), key=lambda host: host.name != config.spawn.host)
    for host in hosts:
        jobs.append(lambda host=host: check_host(host, default=host.name == config.spawn.host, environ=env))
    drivers = plugins.terminal_drivers(config)
    terminal = config.spawn.terminal or default_driver_name(drivers)
    for driver in drivers:
        jobs.append(lambda driver=driver: [check_driver(driver, default=driver.name == terminal)])
    for backend in plugins.memory_backends(config):
        jobs.append(lambda backend=backend: check_backend(
            backend, query=query, deadline_s=config.gather.deadline, limit=config.gather.limit))
    jobs.append(lambda: check_registry(config, plugins))
    results = _run_all(jobs)
    checks = [check for group in results for check in group]
    checks += _missing_defaults(config.spawn.host, terminal, checks)
    checks.sort(key=lambda check: AREAS.index(check.area) if check.area in AREAS else len(AREAS))
    checks += [Check("plugin", f.plugin, "fail", f"plugin {f.plugin} failed in {f.stage}: {f.error}",
                     "fix its configuration or reinstall it; `pao plugins` lists it")
               for f in plugins.failures]
    return Report(tuple(checks))


def _run_all(jobs: Sequence[Callable[[], Iterable[Check]]]) -> list[list[Check]]:
    futures = [start(lambda job=job: list(job()), name="pao-doctor") for job in jobs]
    give_up = time.monotonic() + VERSION_TIMEOUT + 5
    results: list[list[Check]] = []
    for index, future in enumerate(futures):
        try:
            results.append(future.result(timeout=max(0.0, give_up - time.monotonic())))
        except TimeoutError:
            results.append([])
        except Exception as exc:  # a check's own bug is a finding, not a crash
            results.append([Check("doctor", f"check-{index}", "fail", f"a check failed: {describe(exc)}")])
    return results


def _missing_defaults(host: str, terminal: str, checks: Sequence[Check]) -> list[Check]:
    """The default host or terminal that no installed plugin provides."""
    found = {(check.area, check.name) for check in checks}
    missing = []
    if ("host", host) not in found:
        missing.append(Check("host", host, "fail", f"default host {host!r}: no plugin provides it",
                             "install its plugin, or set [spawn] host in the config"))
    if ("terminal", terminal) not in found:
        line = f"default terminal {terminal!r}: no plugin provides it" if terminal else "no terminal driver is installed"
        missing.append(Check("terminal", terminal, "fail", line,
                             "install a terminal driver plugin, or set [spawn] terminal in the config"))
    return missing
