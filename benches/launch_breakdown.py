#!/usr/bin/env python3
"""Where ``pao spawn``'s time goes, from its argv to the first request at the model, and its spawn overhead.

``.venv/bin/python benches/launch_breakdown.py [RUNS] [--claude VERSION] [--json]`` (default 3 runs, Claude
Code 2.1.332). As root it re-runs itself inside a loopback-only network namespace. Each run spawns one agent
(default spawn: briefing, hooks, pao's MCP server; empty configuration, no memory store) on a private tmux
server against the loopback stub, then kills it; runs alternate with the bare CLI and with ``python -c pass``.

Every figure is in seconds from the moment before ``pao spawn`` is started (its argv):

- ``pao step ...``: when each spawn step ended (the steps ``pao spawn`` reports on stderr, summed);
  ``pao before steps``: interpreter start, imports, configuration and the parser, before step 1 began.
- ``cli exec``: when the CLI's own process started: the claude on ``PAO_CLAUDE_COMMAND`` is a ``sh`` that
  records the time and ``exec``s the real one (beside a copy of its ``package.json``, so pao reads its version).
- ``event NAME``: when each event first reached the agent's event log (polled every 5 ms: the hooks' own
  ``at`` keeps whole seconds).
- ``first request``: the first Messages request at the stub after the CLI started; ``task at the model``: the first conversation
  request carrying the task (what ``benches/cao_session_bench.py`` times as launch).

**Spawn overhead** is ``cli exec``: what pao adds before the CLI can start at all (argv to the CLI's process
exec'd: pao's start-up, validation, the session files, the trust pre-seed, the window; the briefing too for a CLI
that does not read it from a pipe: Claude Code 2.0.77-2.1.332 does, so its briefing is composed after the CLI
started, and its steps ``2-3`` and ``4 deliver`` come after step 6, see docs/lifecycle.md). It is
paired with ``python -c pass`` timed the same way in the same run (start to exit), and with the bare CLI
(``claude TASK`` in a tmux window, its task on its command line: the CLI's own floor, no pao at all).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benches"))

from cao_session_bench import runs_and_version  # noqa: E402
from pao_testing.anthropic_stub import AnthropicStub  # noqa: E402
from pao_testing.claude_cli import PrivateTmux, cli_environment, cli_path, rerun_isolated, seed_home  # noqa: E402

DEADLINE = 60.0
STEP_LINE = re.compile(r"^pao: (\d\S* .+?)\s+([\d.]+) ms ", re.MULTILINE)
"""A step of ``pao spawn``'s report on stderr: its label and milliseconds."""
POLL = 0.005


def timing_cli(folder: Path, version: str) -> tuple[Path, Path]:
    """A ``claude`` that records when it started (epoch seconds, one line a start) and then is the real one."""
    real = cli_path(version).resolve()
    folder.mkdir(parents=True)
    package = next(p / "package.json" for p in real.parents if (p / "package.json").exists())
    shutil.copy(package, folder / "package.json")  # pao reads the CLI's version beside its program
    log = folder / "exec.log"
    wrapper = folder / "claude"
    wrapper.write_text(f'#!/bin/sh\ndate +%s.%N >> "{log}"\nexec "{real}" "$@"\n')
    wrapper.chmod(0o755)
    return wrapper, log


class EventWatch(threading.Thread):
    """The first time each event name appears in an event log, polled every :data:`POLL` seconds."""

    def __init__(self, log: Path) -> None:
        super().__init__(daemon=True)
        self.log, self.first, self.stopped = log, {}, threading.Event()

    def run(self) -> None:
        seen = 0
        while not self.stopped.is_set():
            try:
                size = self.log.stat().st_size
            except FileNotFoundError:
                size = 0
            if size > seen:
                now = time.time()
                text = self.log.read_bytes()[seen:].decode("utf-8", "replace")
                seen += len(text.encode())
                for name in re.findall(r'"hook_event_name": ?"([A-Za-z]+)"', text):
                    self.first.setdefault(f"event {name}", now)
            time.sleep(POLL)


def exec_times(log: Path) -> list[float]:
    try:
        return [float(line) for line in log.read_text().split()]
    except FileNotFoundError:
        return []


def spawn_once(env: dict[str, str], stub: AnthropicStub, exec_log: Path, base: Path, index: int) -> dict[str, float]:
    """One ``pao spawn``: every figure in seconds from its argv (see the module's doc)."""
    name, task = f"trace-{index}", f"Trace task {uuid.uuid4().hex[:10]}"
    folder = base / name
    folder.mkdir()
    watch = EventWatch(Path(env["PAO_HOME"], "agents", name, "events.jsonl"))
    watch.start()
    execs = len(exec_times(exec_log))
    started = time.time()
    done = subprocess.run([str(Path(sys.executable).with_name("pao")), "spawn", task, "--folder", str(folder),
                           "--name", name], env=env, capture_output=True, text=True, timeout=DEADLINE)
    returned = time.time()
    if done.returncode:
        raise RuntimeError(f"pao spawn failed: {done.stderr.strip()[-600:]}")
    found = stub.wait_for_message(task, DEADLINE, where=lambda request: request.is_conversation)
    watch.stopped.set()
    watch.join()
    figures = {"pao spawn returned": returned - started}
    started_cli = exec_times(exec_log)[execs:]
    if started_cli:
        figures["cli exec"] = started_cli[0] - started
    figures.update(step_times(done.stderr, figures.get("cli exec")))
    figures.update({key: at - started for key, at in watch.first.items()})
    requests = [r for r in stub.messages() if r.received_at >= started + figures.get("cli exec", 0.0)]  # this CLI's
    if requests:
        figures["first request"] = requests[0].received_at - started
    if found is not None:
        figures["task at the model"] = found.received_at - started
    subprocess.run([str(Path(sys.executable).with_name("pao")), "kill", name], env=env, capture_output=True, timeout=60)
    return figures


def step_times(stderr: str, cli_exec: float | None) -> dict[str, float]:
    """When each of ``pao spawn``'s steps ended, from its argv. The steps' clock starts once pao is loaded, so the
    steps are placed by step 6 (the CLI released), which ends at ``cli_exec`` less the launcher's exec (~5 ms)."""
    ends, total = {}, 0.0
    for label, ms in STEP_LINE.findall(stderr):
        total += float(ms) / 1000
        ends.setdefault(f"pao step {label.strip()}", total)
    released = ends.get("pao step 6 spawn")
    if released is None or cli_exec is None:
        return {}
    offset = cli_exec - released
    return {"pao steps begin": offset, **{label: offset + end for label, end in ends.items()}}


def bare_once(env: dict[str, str], stub: AnthropicStub, wrapper: Path, base: Path, index: int) -> float | None:
    """The CLI alone in a tmux window with its task on its command line: seconds to the task at the model."""
    task, folder = f"Bare task {uuid.uuid4().hex[:10]}", base / f"bare-{index}"
    folder.mkdir()
    home = seed_home(base / f"home-bare-{index}", extra={"projects": {str(folder): {"hasTrustDialogAccepted": True}}})
    tmux = PrivateTmux(f"{env['PAO_TMUX_SOCKET']}-bare")
    bare_env = {**{k: v for k, v in env.items() if k[:4] != "PAO_"}, "HOME": str(home)}
    started = time.time()
    tmux.start(f"bare-{index}", str(folder), [str(wrapper), task], bare_env)
    found = stub.wait_for_message(task, DEADLINE, where=lambda request: request.is_conversation)
    tmux.kill_server()
    return None if found is None else found.received_at - started


def python_pass() -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    return time.perf_counter() - started


def main(runs: int, version: str) -> dict[str, object]:
    base = Path(tempfile.mkdtemp(prefix="pao-launch-trace-"))
    wrapper, exec_log = timing_cli(base / "cli", version)
    spawns: list[dict[str, float]] = []
    bare: list[float | None] = []
    passes: list[float] = []
    with AnthropicStub() as stub:
        home = seed_home(base / "home")
        # a user's pao has its bytecode cached (written on its first run): no PYTHONDONTWRITEBYTECODE from the caller
        caller = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
        env = {**caller, **cli_environment(home, stub.url), "PAO_HOME": str(base / "pao"),
               "PAO_CONFIG": str(base / "pao.toml"), "PAO_CLAUDE_COMMAND": str(wrapper),
               "PAO_TMUX_SOCKET": f"pao-trace-{uuid.uuid4().hex[:8]}"}
        (base / "pao.toml").write_text("")
        try:
            for index in range(runs + 1):  # run 0 warms up (tmux server, page cache) and is not counted
                figures = spawn_once(env, stub, exec_log, base, index)
                bare_s = bare_once(env, stub, wrapper, base, index)
                pass_s = python_pass()
                if index:
                    spawns.append(figures)
                    bare.append(bare_s)
                    passes.append(pass_s)
        finally:
            subprocess.run(["tmux", "-L", env["PAO_TMUX_SOCKET"], "kill-server"], capture_output=True)
            shutil.rmtree(base, ignore_errors=True)
    return report(version, spawns, bare, passes)


def report(version: str, spawns: list[dict[str, float]], bare: list[float | None], passes: list[float]) -> dict:
    def median(values: list[float | None]) -> float | None:
        measured = [value for value in values if value is not None]
        return round(statistics.median(measured), 3) if measured else None

    keys = {key for figures in spawns for key in figures}
    timeline = {key: median([figures.get(key) for figures in spawns]) for key in keys}
    overhead = timeline.get("cli exec")
    python = median(passes)
    return {
        "claude_code": version,
        "runs": len(spawns),
        "timeline_p50_s": dict(sorted(timeline.items(), key=lambda pair: pair[1] or 0)),
        "spawn_overhead_ms": None if overhead is None else round(overhead * 1000, 1),
        "python_c_pass_ms": None if python is None else round(python * 1000, 1),
        "overhead_over_python": round(overhead / python, 1) if overhead and python else None,
        "bare_cli_task_at_model_s": median(bare),
        "all_task_at_model_s": [figures.get("task at the model") for figures in spawns],
        "all_cli_exec_s": [figures.get("cli exec") for figures in spawns],
        "all_bare_s": bare,
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }


if __name__ == "__main__":
    code = rerun_isolated(__file__, sys.argv[1:])
    if code is not None:
        sys.exit(code)
    json.dump(main(*runs_and_version(sys.argv[1:], default=3)), sys.stdout, indent=2)
    print()
