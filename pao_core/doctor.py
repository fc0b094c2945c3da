"""``pao doctor``'s checks: what the next spawn needs, each with a verdict, one line and a fix.

Nothing here knows a particular backend, host or terminal: backends answer through
``health(deadline)``, a test ``search`` and ``local_files()`` (``pao_core.contracts``
gives the optional ones their defaults); plugins add their own findings through
``pao_doctor_checks`` (the agents' plugin: the hosts' CLIs, the terminals, the registry and
its agents, and that some plugin provides the default host and terminal). Every call
that may block runs on a daemon thread under a deadline, so a hung store or CLI costs its
deadline and nothing more.
"""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING, Any, Callable, Iterable, Sequence

import attrs

from pao_core.contracts import Check
from pao_core.errors import describe
from pao_core.waiting import bounded, start

if TYPE_CHECKING:
    from pao_core.config import PaoConfig
    from pao_core.contracts import MemoryBackend
    from pao_core.plugins import Plugins

AREAS = ("host", "host-file", "host-consent", "terminal", "store", "backend", "registry", "agent", "plugin", "doctor")
"""The order checks are shown in."""

DEFAULT_QUERY = "test"
VERSION_TIMEOUT = 15.0


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


def tilde(path: str | os.PathLike[str]) -> str:
    """A path under the home folder written from ``~``."""
    text, home = str(path), os.path.expanduser("~")
    return "~" + text[len(home):] if home != "/" and text.startswith(home + os.sep) else text


def human_size(size: int) -> str:
    value = float(size)
    for unit in ("bytes", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{int(value)} {unit}" if unit == "bytes" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} bytes"


# -- backends -----------------------------------------------------------------------


def check_backend(backend: MemoryBackend, *, query: str, deadline_s: float, limit: int) -> list[Check]:
    """Reachable (health) with its latency, the item count of a test query, its embedded files."""
    name = backend.name
    checks: list[Check] = []
    missing: list[str] = []
    for path in backend.local_files():
        label = tilde(path)
        try:
            size = os.stat(path).st_size
        except FileNotFoundError:
            missing.append(label)
            continue
        checks.append(Check("store", f"{name}:{label}", "ok", f"{name}: embedded store {label}, {human_size(size)}",
                            data={"path": str(path), "bytes": size}))
    started = time.monotonic()
    give_up = started + patience(deadline_s)  # a slow answer is a finding of its own (_slow), not a failure
    try:
        health = bounded(lambda: backend.health(give_up), give_up - time.monotonic())
        items = bounded(lambda: backend.search(query, limit, give_up), give_up - time.monotonic())
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
    checks.append(_slow(name, line, data, deadline_s) if elapsed > deadline_s * 1000 else
                  Check("backend", name, "ok", line, data=data))
    return checks


PATIENCE_S = 10.0
"""How long doctor waits for a store at least: an embedded store's first answer (opening it, loading what it
searches with) can take longer than a spawn's deadline on a small machine, and that is slow, not broken."""


def patience(deadline_s: float) -> float:
    """How long doctor waits for one store: far past the spawn's deadline, so only a store that never answers fails."""
    return max(PATIENCE_S, 5 * deadline_s)


def _slow(name: str, line: str, data: dict[str, Any], deadline_s: float) -> Check:
    """A store that answered, after the spawn's deadline: a spawn would go without it this time."""
    return Check("backend", name, "warn", f"{line}: slower than the [gather] deadline of {deadline_s:g} s",
                 f"a spawn waits {deadline_s:g} s and goes on without it; raise `deadline` in [gather] if this "
                 f"is usual (a first search after a start is often the slow one)", data)


def _not_created(name: str, missing: Sequence[str], says: str) -> Check:
    line = f"{name}: embedded store {', '.join(missing)} does not exist yet"
    return Check("store", f"{name}:{missing[0]}", "warn", line,
                 f"the backend says: {says}")


def _backend_fix(name: str) -> str:
    return (f"start the store or fix [backends.{name}] in the config (see `pao config`); "
            f"`enabled = false` there turns it off")


# -- all of it ----------------------------------------------------------------------


def run_checks(config: PaoConfig, plugins: Plugins, *, query: str = DEFAULT_QUERY) -> Report:
    """Every check, the slow ones (stores, and what plugins check: CLIs' versions...) at once on their own threads."""
    jobs: list[Callable[[], Iterable[Check]]] = [lambda: plugins.doctor_checks(config)]
    for backend in plugins.memory_backends(config):
        jobs.append(lambda backend=backend: check_backend(
            backend, query=query, deadline_s=config.gather.deadline, limit=config.gather.limit))
    checks = [check for group in run_all(jobs, VERSION_TIMEOUT + 5) for check in group]
    checks.sort(key=lambda check: AREAS.index(check.area) if check.area in AREAS else len(AREAS))
    checks += [Check("plugin", f.plugin, "fail", f"plugin {f.plugin} failed in {f.stage}: {f.error}",
                     "fix its configuration or reinstall it; `pao plugins` lists it")
               for f in plugins.failures]
    return Report(tuple(checks))


def run_all(jobs: Sequence[Callable[[], Iterable[Check]]], seconds: float) -> list[list[Check]]:
    """Each job's checks, all jobs at once on daemon threads; a job not done within ``seconds`` gives none."""
    futures = [start(lambda job=job: list(job()), name="pao-doctor") for job in jobs]
    give_up = time.monotonic() + seconds
    results: list[list[Check]] = []
    for index, future in enumerate(futures):
        try:
            results.append(future.result(timeout=max(0.0, give_up - time.monotonic())))
        except TimeoutError:
            results.append([])
        except Exception as exc:  # a check's own bug is a finding, not a crash
            results.append([Check("doctor", f"check-{index}", "fail", f"a check failed: {describe(exc)}")])
    return results
