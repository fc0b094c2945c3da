#!/usr/bin/env python3
"""Scale: a 20,000-observation import, a brief on a 20k and a 100k store, 300 transcripts indexed.

Inputs come from ``benches/scale_corpus.py`` (the eval corpus recombined). Each part runs pao as
the user does, in a throwaway PAO_HOME, with the background embedding on:

- ``import``: ``pao memory import FILE`` (wall time of the command), then a lexical search at
  once, then the background job's vectors: time until every observation has one, and its rate;
- ``brief``: a store of N observations (imported as above; vectors synthetic, clustered, written
  through the store's own tables and cells: embedding 100,000 texts takes about half an hour
  here), then in-process ``pao_core.gather.brief`` over the eval topics;
- ``index``: ``pao history index DIR`` on N transcripts, then the background job's vectors.

    .venv/bin/python benches/scale_bench.py import --observations 20000 [--backend postgres] --json
    .venv/bin/python benches/scale_bench.py brief --observations 20000 100000 --json
    .venv/bin/python benches/scale_bench.py index --sessions 300 --json

Run under the lock (``flock /tmp/pao-heavy.lock ...``); the report carries the load average.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Iterator

sys.path.insert(0, str(Path(__file__).resolve().parent))

from scale_corpus import memory_lines, write_transcripts  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
VECTORS_WAIT_S = 3600.0


def pao(env: dict, *argv: str, timeout: float = 600) -> tuple[float, dict]:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "pao_core", *argv, "--json"], env=env, capture_output=True,
                          text=True, timeout=timeout)
    if done.returncode:
        raise SystemExit(f"pao {' '.join(argv)}: {done.stderr.strip()}")
    return time.perf_counter() - started, json.loads(done.stdout)


@contextlib.contextmanager
def environment(backend: str, semantic: bool = True) -> Iterator[tuple[dict, Path]]:
    with tempfile.TemporaryDirectory(prefix="pao-scale-") as tmp, contextlib.ExitStack() as stack:
        root = Path(tmp)
        (root / "user").mkdir()
        config = root / "config.toml"
        lines = ["[backends.longterm]"] + ([] if semantic else ["semantic = false"])
        if backend == "postgres":
            from pao_testing.postgres import postgres_url

            lines += [f'url = "{stack.enter_context(postgres_url())}"', 'schema = "pao_scale"', "warm_searcher = false"]
        config.write_text("\n".join(lines) + "\n")
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PAO_", "MEMORY_FILE"))}
        env |= {"HOME": str(root / "user"), "PAO_HOME": str(root / "pao"), "PAO_CONFIG": str(config),
                "PAO_BACKGROUND_EMBEDDING": "1"}
        yield env, root


def until(check, timeout: float = VECTORS_WAIT_S) -> float:  # type: ignore[no-untyped-def]
    started = time.perf_counter()
    while not check():
        if time.perf_counter() - started > timeout:
            raise SystemExit("not within the time allowed")
        time.sleep(0.5)
    return time.perf_counter() - started


def job_done(env: dict, name: str) -> bool:
    """The background job's log says its run ended (a look at a file: no process that takes CPU from the job)."""
    log = Path(env["PAO_HOME"]) / "background" / f"{name}.log"
    lines = log.read_text().splitlines() if log.exists() else []
    if any(line.startswith("exit ") and line != "exit 0" for line in lines):
        raise SystemExit(f"the background job failed: {lines[-3:]}")
    return "exit 0" in lines


def import_part(observations: int, backend: str, vectors: bool) -> dict:
    """Without ``vectors`` the store is lexical only: the import's own time, no job to wait for."""
    with environment(backend, semantic=vectors) as (env, root):
        memory = root / "memory.jsonl"
        memory.write_text("\n".join(memory_lines(observations)) + "\n")
        load = os.getloadavg()[0]
        seconds, report = pao(env, "memory", "import", str(memory))
        search_s, found = pao(env, "memory", "search", "TestFlight external testers Beta App Review")
        result = {"observations": report["added"]["observations"], "backend": backend, "import_s": round(seconds, 2),
                  "lexical_hits_at_once": len(found["items"]), "search_s": round(search_s, 2)}
        if vectors:
            fill_s = until(lambda: job_done(env, "longterm"))
            assert pao(env, "memory", "stats")[1]["retrieval"].startswith("semantic + lexical (")
            result |= {"vectors_after_s": round(fill_s, 1), "vectors_per_s": round(observations / fill_s, 1)}
        return result | {"load_before": load, "load_after": os.getloadavg()[0]}


def synthetic_vectors(store, rows: int, seed: int = 5) -> None:  # type: ignore[no-untyped-def]
    """Clustered unit vectors for every observation, written to the store's vector table and cells."""
    import numpy as np

    from pao_postgres.searcher.vectors import names_for
    from pao_postgres.store import cells
    from pao_postgres.store.engine import WRITE_DEADLINE, transaction
    from pao_postgres.store.vectors import _create_table, _set_meta, _upsert

    rng = np.random.default_rng(seed)
    names = names_for(store.options, sqlite=store.is_sqlite)
    with transaction(store.engine(), time.monotonic() + WRITE_DEADLINE, write=True) as connection:
        _create_table(connection, store, names)
        ids = [row[0] for row in connection.exec_driver_sql(f"SELECT {names['o_id']} FROM {names['obs']}")]
        subjects = rng.standard_normal((2000, 384)).astype(np.float32)
        matrix = subjects[rng.integers(0, 2000, len(ids))] + 0.8 * rng.standard_normal((len(ids), 384)).astype(np.float32)
        matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
        _upsert(connection, names, [(oid, "synthetic", vector.tobytes()) for oid, vector in zip(ids, matrix)])
        trained = cells.retrain(connection, names, len(ids), store.is_sqlite) or {}
        _set_meta(connection, names, {"generation": str(time.time_ns()), "count": str(len(ids))} | trained, [])


def brief_part(observations: int, rounds: int) -> dict:
    from pao_core.plugins import load_config
    from pao_core.gather import brief
    from pao_core.plugins import get_plugins
    from pao_postgres.mcpfile import read_memory_file
    from pao_postgres.options import LongtermOptions
    from pao_postgres.store.longterm import LongtermStore

    with environment("sqlite") as (env, root):
        os.environ.update(env)
        memory = root / "memory.jsonl"
        memory.write_text("\n".join(memory_lines(observations)) + "\n")
        store = LongtermStore(LongtermOptions(), Path(env["PAO_HOME"]))
        store.import_memory(read_memory_file(memory))
        synthetic_vectors(store, observations)
        store.close()
        config = load_config()
        plugins = get_plugins()
        topics = [json.loads(line)["topic"] for line in (ROOT / "tests/data/eval/queries.jsonl").read_text().splitlines()
                  if line.strip()]
        brief(topics[0], config=config, plugins=plugins)
        load, timings, items = os.getloadavg()[0], [], []
        for _ in range(rounds):
            for topic in topics:
                started = time.perf_counter()
                items.append(len(brief(topic, config=config, plugins=plugins).items))
                timings.append((time.perf_counter() - started) * 1000)
        ordered = sorted(timings)
        return {"observations": observations, "briefs": len(timings), "p50_ms": round(statistics.median(timings), 1),
                "p95_ms": round(ordered[int(0.95 * (len(ordered) - 1))], 1), "items_mean": round(statistics.fmean(items), 1),
                "retrieval": pao(env, "memory", "stats")[1]["retrieval"],
                "load_before": load, "load_after": os.getloadavg()[0]}


def index_part(sessions: int) -> dict:
    with environment("sqlite") as (env, root):
        folder = root / "transcripts"
        write_transcripts(folder, sessions)
        size = sum(path.stat().st_size for path in folder.rglob("*.jsonl"))
        load = os.getloadavg()[0]
        seconds, report = pao(env, "history", "index", str(folder))

        fill_s = until(lambda: job_done(env, "history"))
        counts = pao(env, "history", "stats")[1]
        assert counts["vectors"] == counts["exchanges"], counts
        return {"sessions": sessions, "megabytes": round(size / 1e6, 1), "exchanges": report["exchanges_added"],
                "index_s": round(seconds, 2), "vectors_after_s": round(fill_s, 1),
                "exchanges_per_s": round(report["exchanges_added"] / fill_s, 1),
                "load_before": load, "load_after": os.getloadavg()[0]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("part", choices=("import", "brief", "index"))
    parser.add_argument("--observations", type=int, nargs="+", default=[20_000])
    parser.add_argument("--sessions", type=int, default=300)
    parser.add_argument("--backend", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--lexical", action="store_true", help="import: semantic = false (the import alone, no job)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    if args.part == "import":
        results = [import_part(n, args.backend, not args.lexical) for n in args.observations]
    elif args.part == "brief":
        results = [brief_part(n, args.rounds) for n in args.observations]
    else:
        results = [index_part(args.sessions)]
    print(json.dumps(results, indent=2) if args.json else "\n".join(map(str, results)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
