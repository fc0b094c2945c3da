#!/usr/bin/env python3
"""Time from an MCP tool call to its result: ``pao mcp`` as a real subprocess, the official SDK's client.

Loads the eval corpus (tests/data/eval: longterm memory and the history index) into a
throwaway PAO_HOME, starts ``pao mcp`` over stdio once (the time to its first answer,
the ``initialize`` handshake, is reported apart), then calls each tool and times the
round trip as the agent's CLI sees it (request written to the result parsed):

* ``search_memory`` for every dev query of the corpus, ``--rounds`` times;
* ``remember``: ``--writes`` new facts (each a new observation with provenance), then
  the same facts again (kept once);
* ``memory_status``, ``--status`` times.

    .venv/bin/python benches/mcp_tool_bench.py [--rounds 3] [--writes 30] [--status 5] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def figures(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "runs": len(values),
        "p50": round(statistics.median(values), 1),
        "p95": round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))], 1),
        "max": round(max(values), 1),
    }


async def measure(env: dict[str, str], topics: list[str], args: argparse.Namespace) -> dict[str, object]:
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(command=sys.executable, args=["-m", "pao_core", "mcp", "--agent", "bench"], env=env)
    started = time.perf_counter()
    async with Client(params) as client:
        connected = (time.perf_counter() - started) * 1000

        async def timed(name: str, arguments: dict[str, object]) -> float:
            began = time.perf_counter()
            result = await client.call_tool(name, arguments)
            elapsed = (time.perf_counter() - began) * 1000
            if result.is_error:
                raise RuntimeError(f"{name}: {result.content[0].text}")
            return elapsed

        await timed("search_memory", {"query": topics[0]})  # warm-up: the stores' first connections
        search = [await timed("search_memory", {"query": topic}) for _ in range(args.rounds) for topic in topics]
        facts = [f"bench fact {n}: the release job signs build {n} before upload" for n in range(args.writes)]
        new = [await timed("remember", {"entity": "bench project", "observation": fact}) for fact in facts]
        again = [await timed("remember", {"entity": "bench project", "observation": fact}) for fact in facts]
        status = [await timed("memory_status", {}) for _ in range(args.status)]
    return {
        "start_to_initialized_ms": round(connected, 1),
        "search_memory_ms": figures(search),
        "remember_new_ms": figures(new),
        "remember_known_ms": figures(again),
        "memory_status_ms": figures(status),
        "queries": len(topics),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=ROOT / "tests" / "data" / "eval")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--writes", type=int, default=30)
    parser.add_argument("--status", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    import attrs

    from pao_core.plugins import load_config
    from pao_eval.evaluate import load_queries, load_stores
    from pao_core.plugins import get_plugins

    with tempfile.TemporaryDirectory(prefix="pao-mcp-bench-") as tmp:
        home = Path(tmp) / "home"
        home.mkdir()
        config_file = Path(tmp) / "config.toml"
        config_file.touch()
        os.environ.update(PAO_HOME=str(home), PAO_CONFIG=str(config_file))
        config = attrs.evolve(load_config(), home=home)
        load_stores(args.corpus, config, get_plugins())
        topics = [query.topic for query in load_queries(args.corpus, "dev")]
        env = {key: value for key, value in os.environ.items()}
        report = asyncio.run(measure(env, topics, args))
    report["load_average"] = [round(value, 2) for value in os.getloadavg()]
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(f"pao mcp started and initialized in {report['start_to_initialized_ms']} ms")
        for key in ("search_memory_ms", "remember_new_ms", "remember_known_ms", "memory_status_ms"):
            print(f"{key[:-3]:<18} {report[key]}")
        print(f"load average {report['load_average']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
