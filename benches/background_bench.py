"""Background embedding: what a search that brought in new memory costs, and how soon it is searchable by meaning.

    .venv/bin/python benches/background_bench.py [--runs 5] [--observations 20]

Every ``pao brief`` here is a new process whose search syncs an MCP memory file into an
empty embedded store (``PAO_HOME`` new each run; the user's cache with the prepared model
weights shared, as on a user's machine):

1. the brief's whole process with the background job on and off, interleaved, each
   run's memory file ``--observations`` observations of its own (no vector cached); with
   the job on, the next run starts once the job has ended, and how long after the brief
   the store had every vector is recorded;
2. the eval corpus's memory file (912 observations) through one brief: how long until
   the job has given every observation a vector (the store's ``pao memory stats``
   then says ``semantic + lexical``).

Prints one JSON object (milliseconds unless named otherwise).
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EVAL_MEMORY = ROOT / "tests" / "data" / "eval" / "memory.jsonl"
TOPIC = "where does the billing service keep its sessions"


def _environment(user: Path, pao_home: Path, memory: Path, job: bool) -> dict[str, str]:
    # users' Pythons cache bytecode: a sandbox's PYTHONDONTWRITEBYTECODE would add compiling from source
    env = {key: value for key, value in os.environ.items()
           if key not in ("PYTHONDONTWRITEBYTECODE", "PAO_EMBEDDINGS_CACHE", "PAO_LOAD_PLUGINS", "PAO_DISABLE_PLUGINS")}
    config = pao_home.parent / f"{pao_home.name}.toml"
    config.write_text("")
    return {**env, "HOME": str(user), "PAO_HOME": str(pao_home), "PAO_CONFIG": str(config),
            "PAO_MEMORY_FILE": str(memory), "PAO_BACKGROUND_EMBEDDING": "1" if job else "0"}


def _brief(env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "pao_core", "brief", TOPIC], env=env, check=True, capture_output=True)
    return (time.perf_counter() - started) * 1000


def _vectors_complete(pao_home: Path) -> bool:
    store = pao_home / "longterm.sqlite3"
    try:
        with sqlite3.connect(f"file:{store}?mode=ro", uri=True, timeout=1) as conn:
            observations = conn.execute("SELECT count(*) FROM observations").fetchone()[0]
            vectors = conn.execute("SELECT count(*) FROM observations_vectors").fetchone()[0]
    except sqlite3.Error:  # the job has not created its table yet, or holds the write lock
        return False
    return observations > 0 and vectors >= observations


def _until_embedded(pao_home: Path, timeout: float = 600.0) -> float:
    """Seconds until every observation of the store has a vector (polled every 20 ms)."""
    started = time.perf_counter()
    while not _vectors_complete(pao_home):
        if time.perf_counter() - started > timeout:
            raise RuntimeError(f"no vectors after {timeout:.0f} s: {(pao_home / 'background' / 'longterm.log').read_text()}")
        time.sleep(0.02)
    return time.perf_counter() - started


def _memory_file(path: Path, run: int, observations: int) -> Path:
    facts = [f"run {run}: the billing service keeps fact {n} about sessions, invoices and retries" for n in range(observations)]
    path.write_text(json.dumps({"type": "entity", "name": f"billing-{run}", "entityType": "service",
                                "observations": facts}) + "\n")
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--observations", type=int, default=20)
    args = parser.parse_args(argv)
    report: dict = {"load_average_start": [round(x, 2) for x in os.getloadavg()]}
    with tempfile.TemporaryDirectory(prefix="pao-background-") as work:
        root = Path(work)
        user = root / "user"
        user.mkdir()
        warm = root / "warm-up"
        _brief(_environment(user, warm, _memory_file(root / "warm-up.jsonl", -1, 2), job=True))  # prepares the weights
        _until_embedded(warm)
        times: dict[str, list[float]] = {"on": [], "off": []}
        embedded_after: list[float] = []
        for run in range(args.runs):
            for job in (True, False):
                home = root / f"{'on' if job else 'off'}-{run}"
                memory = _memory_file(root / f"{home.name}.jsonl", run * 2 + job, args.observations)
                times["on" if job else "off"].append(_brief(_environment(user, home, memory, job)))
                if job:
                    embedded_after.append(_until_embedded(home))
                elif _vectors_complete(home):
                    raise RuntimeError("a store got vectors with the background job off")
        report["brief_first_sync"] = {
            "observations": args.observations, "runs": args.runs,
            "job_on_p50_ms": round(statistics.median(times["on"]), 1),
            "job_off_p50_ms": round(statistics.median(times["off"]), 1),
            "every_vector_after_brief_p50_s": round(statistics.median(embedded_after), 2),
        }
        home = root / "eval"
        brief_ms = _brief(_environment(user, home, EVAL_MEMORY, job=True))
        report["eval_memory_file"] = {"observations": sum(len(json.loads(line).get("observations", []))
                                                          for line in EVAL_MEMORY.read_text().splitlines() if line.strip()),
                                      "brief_ms": round(brief_ms, 1),
                                      "every_vector_after_brief_s": round(_until_embedded(home), 2)}
    report["load_average"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
