#!/usr/bin/env python3
"""Latency of ``brief`` on the embedded default (SQLite longterm store, local history index).

Loads the eval corpus (tests/data/eval) into throwaway stores under a temporary
PAO_HOME through the backends' own commands, then:

* in-process: ``pao_core.gather.brief`` for every query, ``--rounds`` times (after
  one warm-up), reporting p50/p95/max of the whole call, of composition alone
  (fusion, sections, budget, hash) and of each backend's search;
* whole process: ``pao brief TOPIC`` as a new process, ``--cli-runs`` times, alternating with
  ``python -c pass`` (the interpreter's own start-up, paired so that both see the same load): as a user runs
  it (the warm brief server answering, started by the unmeasured runs), lexical only, and with
  ``PAO_WARM_BRIEF=0`` (each brief in its own process).

    .venv/bin/python benches/brief_latency.py [--corpus DIR] [--rounds 5] [--cli-runs 10] [--json]

Targets: in-process p50 <= 50 ms (issue 5); whole process p50 <= 10x ``python -c pass`` p50 (issue 31).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import attrs

ROOT = Path(__file__).resolve().parents[1]


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(share * len(ordered)))], 2)


def figures(values: list[float]) -> dict[str, float]:
    return {"p50": round(statistics.median(values), 2), "p95": percentile(values, 0.95), "max": round(max(values), 2)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=ROOT / "tests" / "data" / "eval")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--cli-runs", type=int, default=10)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    # users' Pythons cache bytecode: without this, each `pao brief` below would compile from source
    # every module edited since its last .pyc (a sandbox's PYTHONDONTWRITEBYTECODE)
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

    from pao_core.plugins import load_config
    from pao_eval.evaluate import load_queries, load_stores
    from pao_core.plugins import get_plugins

    with tempfile.TemporaryDirectory(prefix="pao-bench-") as tmp:
        home = Path(tmp) / "home"
        home.mkdir()
        os.environ["PAO_HOME"] = str(home)
        os.environ.setdefault("PAO_CONFIG", str(Path(tmp) / "config.toml"))
        Path(os.environ["PAO_CONFIG"]).touch()
        config = attrs.evolve(load_config(), home=home, backends={})
        plugins = get_plugins()
        load_stores(args.corpus, config, plugins)
        topics = [query.topic for query in load_queries(args.corpus, "dev")]
        report = {"queries": len(topics), "rounds": args.rounds, **_in_process(topics, config, plugins, args.rounds)}
        report.update(_whole_process(Path(tmp), home, topics, args.cli_runs))
    report.update({"load_average": os.getloadavg()[0], "target_in_process_p50_ms": 50.0, "target_python_ratio": 10.0})
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(f"{len(topics)} queries x {args.rounds} rounds, embedded default stores")
        print(f"in-process brief   {report['in_process_brief_ms']}  (target p50 <= 50 ms)")
        print(f"  composition      {report['compose_ms']}")
        for name, values in report["backend_search_ms"].items():
            print(f"  {name:<16} {values}")
        print(f"pao brief process  {report['pao_brief_process_ms']}  ({args.cli_runs} runs)")
        print(f"python -c pass     {report['python_pass_process_ms']}  ratio {report['pao_brief_to_python_ratio']}"
              " (target <= 10)")
        print(f"PAO_WARM_BRIEF=0   {report['pao_brief_process_cold_ms']}"
              f"  ratio {report['pao_brief_cold_to_python_ratio']}"
              f"; briefs the servers answered: {report['warm_brief_served']}")
    return 0


def _in_process(topics: list[str], config, plugins, rounds: int) -> dict:
    """``brief`` in this process for every topic, ``rounds`` times after one warm-up: the whole call, composition
    alone, each backend's search, and the CPU time of every thread."""
    from pao_core import briefing as briefing_mod
    from pao_core.gather import brief, gather

    backends = plugins.memory_backends(config)
    brief(topics[0], config=config, plugins=plugins, backends=backends)
    whole, compose, per_backend, cpu = [], [], {}, []
    for _ in range(rounds):
        for topic in topics:
            started, started_cpu = time.perf_counter(), time.process_time()
            results = gather(backends, topic, limit=config.gather.limit, timeout=config.gather.deadline)
            gathered = time.perf_counter()
            briefing_mod.compose(topic, folders=(), results=results, config=config, plugins=plugins,
                                 started=time.monotonic())
            done = time.perf_counter()
            cpu.append((time.process_time() - started_cpu) * 1000)  # every thread of this process
            whole.append((done - started) * 1000)
            compose.append((done - gathered) * 1000)
            for name, result in results.items():
                per_backend.setdefault(name, []).append(result.elapsed_ms)
    return {
        "in_process_brief_ms": figures(whole),
        "compose_ms": figures(compose),
        "backend_search_ms": {name: figures(values) for name, values in per_backend.items()},
        "in_process_brief_cpu_ms": figures(cpu),
    }


def _whole_process(tmp: Path, home: Path, topics: list[str], runs: int) -> dict:
    """``pao brief TOPIC`` as a new process ``runs`` times: the default install (semantic + lexical, the warm brief
    server answering), both stores lexical only, and the default with ``PAO_WARM_BRIEF=0`` (every brief in its own
    process), interleaved with ``python -c pass`` so that all see the same load; CPU time is what a busy machine does
    not inflate much (a server's is not the new process's: ``warm_brief_served`` says how many it answered)."""
    from pao_postgres import warm_brief

    lexical_config = tmp / "lexical.toml"
    lexical_config.write_text("[backends.longterm]\nsemantic = false\n[backends.history]\nsemantic = false\n")
    variants = ("python", "semantic", "lexical", "cold")
    cli: dict[str, list[float]] = {variant: [] for variant in variants}
    cli_cpu: dict[str, list[float]] = {variant: [] for variant in variants}
    # a cache folder of the run's own, as a user's is (the plugin index, the prepared weights): a shared
    # ~/.cache/pao is rewritten by every other checkout's pao, which makes each run a complete plugin load;
    # and a runtime folder of its own (the warm brief servers of this run, stopped at its end)
    (tmp / "run").mkdir(mode=0o700)
    base = {**os.environ, "PAO_HOME": str(home), "XDG_CACHE_HOME": str(tmp / "cache"),
            "XDG_RUNTIME_DIR": str(tmp / "run")}
    base.pop(warm_brief.ENV, None)
    envs = {"python": base, "semantic": base, "lexical": {**base, "PAO_CONFIG": str(lexical_config)},
            "cold": {**base, warm_brief.ENV: "0"}}
    for variant in ("semantic", "lexical"):  # unmeasured: the caches a user's earlier runs made, and the warm servers
        for _ in range(2):  # the plugin index, then a run that finds no server and starts one as it exits
            subprocess.run([sys.executable, "-m", "pao_core", "brief", topics[0]], check=True, capture_output=True,
                           env=envs[variant])
    _wait_for_servers(envs["semantic"], 2)
    for index in range(runs):
        for variant in variants:
            topic = topics[index % len(topics)]
            command = ["-c", "pass"] if variant == "python" else ["-m", "pao_core", "brief", topic]
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            started = time.perf_counter()
            subprocess.run([sys.executable, *command], check=True, capture_output=True, env=envs[variant])
            cli[variant].append((time.perf_counter() - started) * 1000)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cli_cpu[variant].append((after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000)
    served = _wait_for_servers(envs["semantic"], 0, op="stop")
    return {
        "pao_brief_process_ms": figures(cli["semantic"]),
        "pao_brief_process_cpu_ms": figures(cli_cpu["semantic"]),
        "pao_brief_process_lexical_ms": figures(cli["lexical"]),
        "pao_brief_process_lexical_cpu_ms": figures(cli_cpu["lexical"]),
        "pao_brief_process_cold_ms": figures(cli["cold"]),
        "pao_brief_process_cold_cpu_ms": figures(cli_cpu["cold"]),
        "warm_brief_served": served,
        "warm_brief_runs": len(cli["semantic"]) + len(cli["lexical"]),
        "python_pass_process_ms": figures(cli["python"]),
        "pao_brief_to_python_ratio": round(statistics.median(cli["semantic"]) / statistics.median(cli["python"]), 1),
        "pao_brief_cold_to_python_ratio": round(statistics.median(cli["cold"]) / statistics.median(cli["python"]), 1),
    }


def _wait_for_servers(env: dict[str, str], count: int, op: str = "status", timeout: float = 120.0) -> int:
    """Wait until ``count`` warm brief servers listen in the run's runtime folder (asked from a process of its
    environment); the briefs they answered. ``op="stop"``: then stop them."""
    code = ("import json, time, sys; from pao_postgres import warm_brief; "
            f"print(json.dumps([v for v in warm_brief.servers(time.monotonic() + 2, {op!r}).values() if v]))")
    limit = time.monotonic() + timeout
    while True:
        found = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                                          check=True).stdout)
        if len(found) >= count or time.monotonic() > limit:
            return sum(server.get("briefs", 0) for server in found)
        time.sleep(0.5)


if __name__ == "__main__":
    raise SystemExit(main())
