"""Lifecycle benchmarks with the fake agent (testing/pao_testing/lifecycle) in real tmux on a private socket.

* readiness: the fake agent draws its ready screen after a random 0.05-2.5 s of a
  still "starting" screen (the worst case for the backoff); latency is pao noticing
  (``wait_ready`` returning) minus the moment the agent drew the screen. Target p50 <= 100 ms.
* overhead: a whole ``pao spawn --no-nudge`` process minus the agent's own start-up
  (its first line of code to its ready screen). Target <= 300 ms. The backends are
  whatever plugins are installed (``PAO_LOAD_PLUGINS`` unset: every entry point), with
  the eval corpus loaded: its memory in the embedded longterm store, its transcripts
  indexed by the history store; the topic is an eval query, so both return items.
  ``pao`` runs as a user runs it: the console script, the fake host installed as a
  plugin distribution, so every spawn starts from the plugin index.
* concurrent: five ``pao spawn`` processes at once; all five must end ready.

Run from the repository root:  .venv/bin/python benches/lifecycle_bench.py [readiness|overhead|concurrent][=COUNT]...
"""

from __future__ import annotations

import json
import os
import random
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "testing"))

from pao_testing.lifecycle.fake_host import FakeDetector, FakeHost  # noqa: E402

RUN_PAO = str(ROOT / "testing" / "pao_testing" / "lifecycle" / "run_pao.py")


def _percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "n": len(ordered),
        "p50_ms": round(statistics.median(ordered), 1),
        "p90_ms": round(ordered[int(0.9 * (len(ordered) - 1))], 1),
        "max_ms": round(ordered[-1], 1),
    }


def readiness(runs: int = 30) -> dict[str, object]:
    from pao_agents.readiness import ScreenReader, wait_ready
    from pao_tmux.driver import TmuxDriver, TmuxOptions

    socket = f"pao-bench-{os.getpid()}"
    driver = TmuxDriver(TmuxOptions(socket=socket))
    reader = ScreenReader.for_host("fake", [FakeDetector()])
    host = FakeHost()
    latencies, polls = [], []
    rng = random.Random(7)
    try:
        with tempfile.TemporaryDirectory() as work:
            for run in range(runs):
                stamps = Path(work, f"stamps-{run}.json")
                env = {**os.environ, "FAKE_AGENT_START_DELAY": f"{rng.uniform(0.05, 2.5):.3f}",
                       "FAKE_AGENT_STAMPS": str(stamps)}
                target = driver.spawn(f"r{run}", work, host.command(None), env)  # type: ignore[arg-type]
                ready = wait_ready(driver, target, reader, 30, name=f"r{run}")
                noticed = time.time()
                while not stamps.exists():  # written right after the screen was drawn
                    time.sleep(0.005)
                drawn = json.loads(stamps.read_text())["ready"]
                latencies.append((noticed - drawn) * 1000)
                polls.append(ready.polls)
                driver.kill(target)
    finally:
        subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True, check=False)
    return {"readiness_latency": _percentiles(latencies), "target_p50_ms": 100, "load_average": os.getloadavg()[0],
            "polls_p50": statistics.median(polls)}


def _pao_env(home: str, socket: str) -> dict[str, str]:
    # users' Pythons cache bytecode: a sandbox's PYTHONDONTWRITEBYTECODE would make each pao compile from
    # source every module edited since its last .pyc
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    return {**env, "PAO_HOME": home, "HOME": home, "PAO_TMUX_SOCKET": socket,
            "PAO_CONFIG": str(Path(home, "config.toml"))}


def _installed_fake_host(folder: Path, env: dict[str, str]) -> tuple[list[str], dict[str, str]]:
    """``pao`` as a user runs it, with the fake host installed as a plugin distribution.

    A distribution's metadata (``pao-fake-host``, one ``pao`` entry point) in a folder on
    ``PYTHONPATH`` makes the fake host an installed plugin: after the first run every
    ``pao`` starts from the plugin index and imports only the plugins its hooks need, as
    a user's ``pao spawn`` with Claude Code does. (``run_pao.py`` registers the host by
    hand, which makes every run a complete load of every plugin.)
    """
    metadata = folder / "pao_fake_host-0.dist-info"
    metadata.mkdir(parents=True)
    (metadata / "METADATA").write_text("Metadata-Version: 2.1\nName: pao-fake-host\nVersion: 0\n")
    (metadata / "entry_points.txt").write_text("[pao]\nfake-host = pao_testing.lifecycle.fake_host:PLUGIN\n")
    path = os.pathsep.join([str(ROOT / "testing"), str(folder), *filter(None, [env.get("PYTHONPATH")])])
    script = Path(sys.executable).with_name("pao")
    return ([str(script)] if script.exists() else [sys.executable, "-m", "pao_core"]), {**env, "PYTHONPATH": path}


def _python_startup_ms(runs: int) -> float:
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples)


TOPIC = "fix the Zola build failing on Cloudflare Pages preview deploys"
"""An eval query (q02) that both stores answer."""
EVAL = ROOT / "tests" / "data" / "eval"


def _load_eval_memory(pao: list[str], env: dict[str, str], home: Path) -> None:
    """The eval corpus in the stores a spawn reads: memory imported, transcripts indexed."""
    shutil.copytree(EVAL / "transcripts", home / ".claude" / "projects")
    for args in (["memory", "import", str(EVAL / "memory.jsonl")], ["history", "index"]):
        # vectors in this command, not a background job running beside the measured spawns
        subprocess.run([*pao, *args], env={**env, "PAO_BACKGROUND_EMBEDDING": "0"}, check=True, capture_output=True)


def overhead(runs: int = 10) -> dict[str, object]:
    """pao's own time in ``pao spawn``: the whole process minus the agent's own start-up.

    Measured as a default install runs it (``semantic``: both stores fuse vector search
    with the lexical one, which loads numpy and the model in every spawn) and with
    ``semantic = false`` in both stores (``lexical``, as without the model wheel).
    """
    from pao_embeddings.model import available

    variants = {"semantic": _overhead(runs, semantic=True)} if available() else {}
    variants["lexical"] = _overhead(runs, semantic=False)
    return variants


def _overhead(runs: int, semantic: bool) -> dict[str, object]:
    """The agent's start-up is its interpreter's start (``python -c pass``, measured in the
    same run) plus its first line of code to its ready screen (stamped by the agent)."""
    socket = f"pao-bench-{os.getpid()}"
    totals, agent_starts, overheads, cpu, steps, items = [], [], [], [], {}, []
    python_ms = _python_startup_ms(runs)
    try:
        with tempfile.TemporaryDirectory() as home:
            flag = str(semantic).lower()
            config = f'[spawn]\nhost = "fake"\n[backends.history]\nsemantic = {flag}\n[backends.longterm]\nsemantic = {flag}\n'
            Path(home, "config.toml").write_text(config)
            pao, base_env = _installed_fake_host(Path(home, "site"), _pao_env(home, socket))
            _load_eval_memory(pao, base_env, Path(home))
            for run in range(runs):
                folder = Path(home, f"proj{run}")
                folder.mkdir()
                stamps = folder / "stamps.json"
                env = {**base_env, "FAKE_AGENT_STAMPS": str(stamps)}
                started, before = time.time(), resource.getrusage(resource.RUSAGE_CHILDREN)
                out = subprocess.run([*pao, "spawn", TOPIC, "--folder", str(folder),
                                      "--no-nudge", "--json"], env=env, check=True, capture_output=True, text=True)
                total = (time.time() - started) * 1000
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                cpu.append((after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000)
                marks = json.loads(stamps.read_text())
                agent = (marks["ready"] - marks["start"]) * 1000 + python_ms
                totals.append(total)
                agent_starts.append(agent)
                overheads.append(total - agent)
                spawned = json.loads(out.stdout)
                found = re.search(r"(\d+) items from (\d+) backends", out.stderr)
                items.append(int(found[1]) if found else 0)
                for step in spawned["steps"]:
                    steps.setdefault(step["step"], []).append(step["ms"])
                subprocess.run([*pao, "kill", f"proj{run}"], env=env, check=True, capture_output=True)
    finally:
        subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True, check=False)
    return {"pao_spawn_total": _percentiles(totals), "agent_own_startup": _percentiles(agent_starts),
            "pao_overhead": _percentiles(overheads), "target_ms": 300, "topic": TOPIC, "briefing_items": items,
            "pao_process_cpu": _percentiles(cpu), "load_average": os.getloadavg()[0], "python_startup_ms": round(python_ms, 1),
            "steps_p50_ms": {name: round(statistics.median(values), 1) for name, values in steps.items()}}


def concurrent(agents: int = 5) -> dict[str, object]:
    socket = f"pao-bench-{os.getpid()}-{uuid.uuid4().hex[:4]}"
    try:
        with tempfile.TemporaryDirectory() as home:
            Path(home, "config.toml").write_text('[spawn]\nhost = "fake"\n')
            env = _pao_env(home, socket)
            started = time.time()
            procs = []
            for i in range(agents):
                folder = Path(home, f"proj{i}")
                folder.mkdir()
                procs.append(subprocess.Popen([sys.executable, RUN_PAO, "spawn", "all at once", "--folder",
                                               str(folder), "--json"], env=env, stdout=subprocess.PIPE,
                                              stderr=subprocess.PIPE, text=True))
            records = [json.loads(p.communicate()[0]) for p in procs]
            wall = time.time() - started
            listed = json.loads(subprocess.run([sys.executable, RUN_PAO, "list", "--json"], env=env, check=True,
                                               capture_output=True, text=True).stdout)["agents"]
    finally:
        subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True, check=False)
    return {"spawned": len(records), "states_at_exit": sorted(r["state"] for r in records),
            "registry_live": sorted(a["observed"]["state"] for a in listed), "wall_ms": round(wall * 1000, 1),
            "load_average": os.getloadavg()[0]}


if __name__ == "__main__":
    chosen = sys.argv[1:] or ["readiness", "overhead", "concurrent"]  # NAME or NAME=COUNT (runs, agents)
    results = {}
    for spec in chosen:
        name, _, count = spec.partition("=")
        results[name] = globals()[name](int(count)) if count else globals()[name]()
    json.dump(results, sys.stdout, indent=2)
    print()
