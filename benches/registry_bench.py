#!/usr/bin/env python3
"""One registry operation on the JSON file and on PostgreSQL, and ``pao list`` on each.

In one process (the store opened once, as a command does), ``--ops`` times each:
``add`` a new agent, ``update`` one (the ``change`` transaction: read, edit, write),
``find`` one, ``list`` a registry of ``--agents`` agents, ``remove`` one. Then
``pao list --json`` as a whole process, ``--runs`` times, on each store (PostgreSQL: the
connection is part of it). PostgreSQL is a throwaway cluster on 127.0.0.1 over TCP
(``pao_testing.postgres``, with ``fsync`` turned back on: both stores make each write
durable; ``PAO_TEST_POSTGRES_URL`` to use another server as it is).

    .venv/bin/python benches/registry_bench.py [--ops 200] [--agents 20] [--runs 11] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[1]


def figures(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {"runs": len(values), "p50": round(statistics.median(values), 3),
            "p95": round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))], 3)}


def timed(action: Callable[[], object]) -> float:
    began = time.perf_counter()
    action()
    return (time.perf_counter() - began) * 1000


def operations(env: dict[str, str], ops: int, agents: int) -> dict[str, dict[str, float]]:
    from pao_core.plugins import load_config
    from pao_agents.spec import AgentRecord
    from pao_agents.registry import open_registry

    registry = open_registry(load_config(env))

    def record(name: str) -> AgentRecord:
        return AgentRecord(name=name, folder="/srv/api", topic="fix the login bug", host="claude-code",
                           terminal="tmux", target="pao:%1")

    for n in range(agents):
        registry.add(record(f"resident-{n}"))
    names = [f"bench-{n}" for n in range(ops)]
    return {
        "add": figures([timed(lambda name=name: registry.add(record(name))) for name in names]),
        "update": figures([timed(lambda name=name: registry.update(name, state="busy")) for name in names]),
        "find": figures([timed(lambda name=name: registry.find(name)) for name in names]),
        "list": figures([timed(registry.list) for _ in range(min(ops, 50))]),
        "remove": figures([timed(lambda name=name: registry.remove(name)) for name in names]),
    }


def pao_list(envs: dict[str, dict[str, str]], runs: int) -> dict[str, dict[str, float]]:
    """``pao list --json`` on each store, the stores taking turns round by round (the load changes alike)."""
    command = [sys.executable, "-m", "pao_core", "list", "--json"]

    def once(store: str) -> float:
        return timed(lambda: subprocess.run(command, env=envs[store], check=True, capture_output=True, timeout=60))

    for store in envs:
        once(store)  # warm caches (entry points, the OS's page cache)
    times: dict[str, list[float]] = {store: [] for store in envs}
    for round_ in range(runs):
        for store in (list(envs) if round_ % 2 else list(reversed(envs))):
            times[store].append(once(store))
    extra = [on_postgres - on_file for on_file, on_postgres in zip(times["json"], times["postgresql"])]
    return {**{store: figures(values) for store, values in times.items()}, "postgresql_minus_json": figures(extra)}


def measure(url: str, args: argparse.Namespace) -> dict[str, object]:
    results: dict[str, object] = {}
    envs: dict[str, dict[str, str]] = {}
    with tempfile.TemporaryDirectory(prefix="pao-registry-bench-") as tmp:
        for store, registry_url in (("json", ""), ("postgresql", url)):
            config = Path(tmp) / f"{store}.toml"
            config.write_text('[machine]\nname = "bench"\n' + (f'[registry]\nurl = "{registry_url}"\n' if registry_url else ""))
            envs[store] = {**os.environ, "PAO_HOME": str(Path(tmp) / store), "PAO_CONFIG": str(config)}
            envs[store].pop("PAO_REGISTRY_URL", None)
            results[store] = {"operations_ms": operations(envs[store], args.ops, args.agents)}
        results["pao_list_ms"] = pao_list(envs, args.runs)
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ops", type=int, default=200)
    parser.add_argument("--agents", type=int, default=20)
    parser.add_argument("--runs", type=int, default=11)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT / "testing"))
    from pao_testing.postgres import interrupt_on_sigterm, postgres_url

    interrupt_on_sigterm()
    given = bool(os.environ.get("PAO_TEST_POSTGRES_URL"))
    with postgres_url() as server:
        import psycopg

        database = "bench_" + uuid.uuid4().hex[:8]
        with psycopg.connect(server, autocommit=True, connect_timeout=10) as connection:
            if not given:  # the throwaway cluster skips fsync for the tests; the JSON file is fsynced: compare like with like
                connection.execute("ALTER SYSTEM SET fsync = on")
                connection.execute("ALTER SYSTEM SET full_page_writes = on")
                connection.execute("SELECT pg_reload_conf()")
            connection.execute(f"CREATE DATABASE {database}")
            durable = connection.execute("SELECT current_setting('fsync'), current_setting('synchronous_commit')").fetchone()
        results = measure(server.rsplit("/", 1)[0] + "/" + database, args)
        with psycopg.connect(server, autocommit=True, connect_timeout=10) as connection:
            connection.execute(f"DROP DATABASE {database} WITH (FORCE)")
    results["postgresql_settings"] = {"fsync": durable[0], "synchronous_commit": durable[1]}
    results["settings"] = {"ops": args.ops, "agents": args.agents, "runs": args.runs}
    if args.json:
        print(json.dumps(results))
        return 0
    for store in ("json", "postgresql"):
        for op, f in results[store]["operations_ms"].items():
            print(f"{store:<11} {op:<7} p50 {f['p50']:7.3f} ms  p95 {f['p95']:7.3f} ms  ({f['runs']} ops)")
    for key, f in results["pao_list_ms"].items():
        print(f"pao list --json (whole process), {key}: p50 {f['p50']:.1f} ms  p95 {f['p95']:.1f} ms  ({f['runs']} runs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
