#!/usr/bin/env python3
"""Search latency of the longterm backend on N synthetic observations.

    .venv/bin/python benches/longterm_bench.py --backend postgres --rows 1000000 [--url URL]
    .venv/bin/python benches/longterm_bench.py --backend sqlite --rows 100000

Generates a deterministic corpus (Zipf-distributed pseudo-words, 8-24 per
observation, 20 observations per entity), loads it (PostgreSQL: COPY, indexes built
after the load; SQLite: one transaction through the FTS triggers), then measures
``LongtermBackend.search`` as ``pao brief`` calls it:

- cold: the first search of a fresh process, connection (and pool) included, with no
  warm searcher (``warm_searcher = false``: the search runs in the new process);
- cold_searcher: the same with the store's warm searcher running (started by an
  unmeasured first search, as a user's first ``pao`` process starts it): the new process
  asks it over its socket, and its connection and model are already warm;
- warm: later searches in one process, pool reused (in-process, no searcher).

PostgreSQL: ``--url`` or ``PAO_TEST_POSTGRES_URL``, else a throwaway cluster; with
``--reuse``, a server whose bench schema already holds ``--rows`` observations of an
earlier run keeps them (loading a million rows takes minutes).
The report says which retrieval ran (``pao doctor``'s words: semantic + lexical, or
lexical only and why) and which heavy libraries the cold search imported.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Iterator

import attrs

from pao_postgres.searcher import warm
from pao_postgres.backend import LongtermBackend
from pao_postgres.store.engine import LongtermError
from pao_postgres.options import LongtermOptions
from pao_testing.postgres import interrupt_on_sigterm, postgres_url

SCHEMA = "pao_bench"
PER_ENTITY = 20
SYLLABLES = ["ka", "lo", "mi", "ne", "ru", "ta", "shi", "po", "ve", "dan", "gor", "bel", "tis", "mar", "qu", "zen"]


def vocabulary(size: int, rng: random.Random) -> list[str]:
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4))))
    return sorted(words)


def zipf_sampler(words: list[str], rng: random.Random):
    weights = [1.0 / (rank + 1) for rank in range(len(words))]
    cumulative, total = [], 0.0
    for weight in weights:
        total += weight
        cumulative.append(total)

    def sample(count: int) -> list[str]:
        return rng.choices(words, cum_weights=cumulative, k=count)

    return sample


def corpus(rows: int, seed: int = 7) -> Iterator[tuple[int, str, int]]:
    """(entity number, content, position) for ``rows`` observations."""
    rng = random.Random(seed)
    sample = zipf_sampler(vocabulary(30_000, rng), rng)
    for index in range(rows):
        yield index // PER_ENTITY, " ".join(sample(rng.randint(8, 24))), index % PER_ENTITY


def topics(count: int, rows: int, seed: int = 11) -> list[str]:
    """Spawn-like topics: 2-5 words of one stored observation, filler words, and one word
    from another observation (so most topics have an answer and few match every word)."""
    rng = random.Random(seed)
    wanted = sorted(rng.sample(range(rows), min(rows, 2 * count)))
    picked = {}
    for index, (_, content, _) in enumerate(corpus(rows)):
        if index in wanted:
            picked[index] = content.split()
        if len(picked) == len(wanted):
            break
    bodies = [picked[index] for index in wanted]
    rng.shuffle(bodies)
    fillers = ["fix the", "why does", "update", "look at the", "with", "and", "for my"]
    result = []
    for index in range(count):
        own, other = bodies[2 * index % len(bodies)], bodies[(2 * index + 1) % len(bodies)]
        words = rng.sample(own, min(len(own), rng.randint(2, 5))) + [rng.choice(other)]
        result.append(" ".join(f"{rng.choice(fillers)} {w}" if rng.random() < 0.3 else w for w in words))
    return result


def load_postgres(url: str, rows: int, reuse: bool = False, schema: str = SCHEMA, vectors: bool = False) -> bool:
    """Load ``rows`` observations into the bench schema; False when ``reuse`` found them loaded."""
    import psycopg

    backend = LongtermBackend("longterm", LongtermOptions(url=url, schema=schema), Path("."))
    plain = url.replace("postgresql+psycopg://", "postgresql://")
    if reuse and _loaded(plain, schema) == (rows, rows if vectors else 0):
        return False
    with psycopg.connect(plain, autocommit=True) as connection:
        connection.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
    backend.store.init()
    tables = backend.store.tables
    indexes = list(tables.observations.indexes) + list(tables.entities.indexes)
    with psycopg.connect(plain) as connection:
        for index in indexes:
            connection.execute(f'DROP INDEX IF EXISTS {schema}."{index.name}"')
        now = dt.datetime.now(dt.timezone.utc)
        entity_count = (rows + PER_ENTITY - 1) // PER_ENTITY
        with connection.cursor().copy(f"COPY {schema}.entities (id, name, entity_type) FROM STDIN") as copy:
            for number in range(entity_count):
                copy.write_row((number + 1, f"entity {number}", "Synthetic"))
        columns = "(entity_id, content, position, created_at)"
        with connection.cursor().copy(f"COPY {schema}.observations {columns} FROM STDIN") as copy:
            for entity, content, position in corpus(rows):
                copy.write_row((entity + 1, content, position, now))
        connection.execute(f"SELECT setval(pg_get_serial_sequence('{schema}.entities', 'id'), {entity_count})")
        connection.commit()
    backend.store.init()  # recreates the dropped indexes
    with psycopg.connect(plain, autocommit=True) as connection:
        connection.execute(f"VACUUM ANALYZE {schema}.observations")
        connection.execute(f"VACUUM ANALYZE {schema}.entities")
    if vectors:
        load_vectors(backend.store, plain, rows)
    return True


def load_vectors(store, url: str, rows: int, seed: int = 5) -> None:
    """Synthetic unit vectors for observations 1..rows (clustered around 2,000 directions, as
    text on a few thousand subjects is), grouped in cells by pao_postgres.store.cells,
    written with COPY: embedding a million texts would take hours on this machine."""
    import numpy as np
    import psycopg

    from pao_postgres.store import cells
    from pao_postgres.store.engine import WRITE_DEADLINE, transaction
    from pao_postgres.searcher.vectors import names_for
    from pao_postgres.store.vectors import _create_table, _set_meta

    rng = np.random.default_rng(seed)
    subjects = rng.standard_normal((2000, 384)).astype(np.float32)
    matrix = subjects[rng.integers(0, len(subjects), rows)] + 0.8 * rng.standard_normal((rows, 384)).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    count = cells.cell_count(rows)
    centroids = cells.train(matrix[rng.choice(rows, min(rows, count * cells.SAMPLE_PER_CELL), replace=False)], count)
    names = names_for(store.options, sqlite=False)
    with transaction(store.engine(), time.monotonic() + WRITE_DEADLINE, write=True) as connection:
        _create_table(connection, store, names)
    with psycopg.connect(url) as connection:
        with connection.cursor().copy(f"COPY {names['vectors']} (observation_id, digest, vector) "
                                      "FROM STDIN (FORMAT BINARY)") as copy:
            copy.set_types(["int4", "text", "bytea"])
            for index in range(rows):
                copy.write_row((index + 1, "synthetic", matrix[index].tobytes()))
    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute(f"VACUUM ANALYZE {names['vectors']}")
    parts = [(range(start + 1, min(rows, start + cells.CHUNK) + 1), cells.assign(part, centroids), *cells.codes_of(part))
             for start in range(0, rows, cells.CHUNK) for part in [matrix[start : start + cells.CHUNK]]]
    with transaction(store.engine(), time.monotonic() + WRITE_DEADLINE, write=True) as connection:
        cells.write_cells(connection, names, centroids, parts, sqlite=False)
        _set_meta(connection, names, {"generation": str(time.time_ns()), "count": str(rows), "cells": str(time.time_ns()),
                                      "cells_trained": str(rows)}, [])


def _loaded(url: str, schema: str) -> tuple[int, int]:
    """Observations and vectors in the bench schema (0: none, or no schema)."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as connection:
        counts = []
        for table in ("observations", "observations_vectors"):
            exists = connection.execute("SELECT to_regclass(%s)", (f"{schema}.{table}",)).fetchone()[0] is not None
            counts.append(connection.execute(f"SELECT count(*) FROM {schema}.{table}").fetchone()[0] if exists else 0)
        return counts[0], counts[1]


def load_sqlite(home: Path, rows: int) -> None:
    import sqlite3

    backend = LongtermBackend("longterm", LongtermOptions(), home)
    backend.store.init()
    now = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")
    with sqlite3.connect(backend.store.sqlite_file) as connection:
        entity_count = (rows + PER_ENTITY - 1) // PER_ENTITY
        connection.executemany(
            "INSERT INTO entities (id, name, entity_type) VALUES (?, ?, 'Synthetic')",
            ((n + 1, f"entity {n}") for n in range(entity_count)),
        )
        connection.executemany(
            "INSERT INTO observations (entity_id, content, position, created_at) VALUES (?, ?, ?, ?)",
            ((entity + 1, content, position, now) for entity, content, position in corpus(rows)),
        )
        connection.execute("INSERT INTO observations_fts(observations_fts) VALUES ('optimize')")
        connection.execute("ANALYZE")


def variant(options: LongtermOptions, mode: str) -> LongtermOptions:
    """``ranked``, ``original``, or ``ranked-lexical`` (ranked with ``semantic = false``)."""
    name, _, lexical = mode.partition("-")
    return attrs.evolve(options, mode=name, semantic=options.semantic and lexical != "lexical")


def measure(options: LongtermOptions, home: Path, queries: list[str], mode: str, rounds: int = 1) -> dict:
    """Warm latencies in this process (after one warm-up search): ``rounds`` passes over
    the topics, summarised together and per pass (the machine's load moves between them)."""
    backend = LongtermBackend("longterm", attrs.evolve(variant(options, mode), warm_searcher=False), home)
    backend.search(queries[0], 10, time.monotonic() + 30)
    timings, sizes, errors, passes = [], [], 0, []
    for _ in range(rounds):
        started_pass = len(timings)
        for query in queries:
            started = time.perf_counter()
            try:
                sizes.append(len(backend.search(query, 10, time.monotonic() + 30)))
            except LongtermError:
                errors += 1  # past the 30 s deadline: counted, timed as what it cost
            timings.append((time.perf_counter() - started) * 1000)
        passes.append(summary(timings[started_pass:]) | {"load_average": round(os.getloadavg()[0], 2)})
    report = summary(timings) | {"items_mean": statistics.fmean(sizes) if sizes else 0.0, "errors": errors}
    return report | ({"passes": passes} if rounds > 1 else {})


COLD_CODE = (
    "import json, sys, time\n"
    "from pathlib import Path\n"
    "from pao_postgres.backend import LongtermBackend\n"
    "from pao_postgres.options import LongtermOptions\n"
    "spec = json.loads(sys.argv[1])\n"
    "backend = LongtermBackend('longterm', LongtermOptions(url=spec['url'], schema=spec['schema'], "
    "mode=spec['mode'], semantic=spec['semantic'], warm_searcher=spec['searcher']), Path(spec['home']))\n"
    "started, cpu = time.perf_counter(), time.process_time()\n"
    "backend.search(spec['query'], 10, time.monotonic() + 30)\n"
    "print(json.dumps([(time.perf_counter() - started) * 1000, (time.process_time() - cpu) * 1000, "
    "[name for name in ('sqlalchemy', 'psycopg', 'numpy') if name in sys.modules], "
    "backend._searched_here]))\n"
)
"""A new process's first search: ``LongtermBackend.search`` timed from after the backend is made."""


def cold(options: LongtermOptions, home: Path, queries: list[str], mode: str, runs: int,
         searcher_too: bool = False) -> dict:
    """First search of a fresh process, each in its own interpreter: wall and CPU time, the
    heavy libraries it imported (SQLAlchemy, psycopg, numpy), and how many searches ran
    in-process. ``cold``: the warm searcher off (today's in-process path); with
    ``searcher_too`` also ``cold_searcher``: the warm searcher on (started by an unmeasured
    first search and waited for), each run on the same topic right after the other's
    (interleaved: the machine's load moves between runs)."""
    kinds = [False, True] if searcher_too else [False]
    timings: dict[bool, list[float]] = {kind: [] for kind in kinds}
    cpu: dict[bool, list[float]] = {kind: [] for kind in kinds}
    imports: dict[bool, set[str]] = {kind: set() for kind in kinds}
    in_process = dict.fromkeys(kinds, 0)
    # users' Pythons cache bytecode: a sandbox's PYTHONDONTWRITEBYTECODE would add compiling from source
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONDONTWRITEBYTECODE", warm.ENV)}
    for index in range(-1, runs):  # -1: unmeasured, prepares the model's weights file (and starts the searcher)
        for searcher in kinds:
            spec = {"url": options.url, "schema": options.schema, "mode": variant(options, mode).mode,
                    "home": str(home), "semantic": variant(options, mode).semantic, "searcher": searcher,
                    "query": queries[index % len(queries)]}
            out = subprocess.run([sys.executable, "-c", COLD_CODE, json.dumps(spec)], capture_output=True, text=True,
                                 check=True, env=env)
            wall, used, loaded, here = json.loads(out.stdout)
            if index < 0:
                if searcher:
                    wait_for_searcher(attrs.evolve(variant(options, mode), warm_searcher=True), home)
                continue
            timings[searcher].append(wall)
            cpu[searcher].append(used)
            imports[searcher].update(loaded)
            in_process[searcher] += bool(here)
    return {("cold_searcher" if kind else "cold"): summary(timings[kind]) | {
        "cpu_p50_ms": round(statistics.median(cpu[kind]), 2), "imported": sorted(imports[kind]),
        "in_process": in_process[kind]} for kind in kinds}


def wait_for_searcher(options: LongtermOptions, home: Path, timeout: float = 120.0) -> None:
    """Until the warm searcher of ``options`` answers (it warms up before it binds its socket)."""
    limit = time.monotonic() + timeout
    while time.monotonic() < limit:
        found = warm.status(options, home, "longterm", time.monotonic() + 2)
        if found and "pid" in found:
            return
        time.sleep(0.2)
    raise RuntimeError(f"the warm searcher did not start in {timeout:.0f} s: {warm.describe(options, home, 'longterm', time.monotonic() + 2)}")


def retrieval(options: LongtermOptions, home: Path) -> str:
    """Which retrieval the searches ran, as ``pao doctor`` says it."""
    from pao_postgres.store.vectors import retrieval_status

    store = LongtermBackend("longterm", options, home).store
    return retrieval_status(store, store.stats(time.monotonic() + 60)["observations"], time.monotonic() + 60)


def summary(timings: list[float]) -> dict:
    ordered = sorted(timings)
    return {
        "n": len(ordered),
        "p50_ms": round(statistics.median(ordered), 2),
        "p95_ms": round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))], 2),
        "max_ms": round(ordered[-1], 2),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=("postgres", "sqlite"), required=True)
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--url")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--cold-runs", type=int, default=20)
    parser.add_argument("--modes", default="ranked,original", help="comma list of ranked, original, ranked-lexical")
    parser.add_argument("--rounds", type=int, default=1, help="warm passes over the topics")
    parser.add_argument("--reuse", action="store_true", help="PostgreSQL: keep a bench schema of --rows observations")
    parser.add_argument("--schema", default=SCHEMA, help="PostgreSQL: the bench schema (dropped and loaded)")
    parser.add_argument("--vectors", action="store_true",
                        help="PostgreSQL: a synthetic vector for every observation, in cells, so searches are semantic too")
    args = parser.parse_args(argv)
    interrupt_on_sigterm()  # the throwaway cluster is stopped on SIGTERM too
    queries = topics(args.queries, args.rows)
    report: dict = {"backend": args.backend, "rows": args.rows, "load_average_start": [round(x, 2) for x in os.getloadavg()]}
    with contextlib.ExitStack() as stack:
        home = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="pao-bench-")))
        (home / "run").mkdir(mode=0o700)
        os.environ["XDG_RUNTIME_DIR"] = str(home / "run")  # this run's warm searchers, stopped at its end
        stack.callback(warm.stop_all, time.monotonic() + 5)
        started = time.perf_counter()
        if args.backend == "postgres":
            url = args.url or stack.enter_context(postgres_url())
            report["loaded"] = load_postgres(url, args.rows, args.reuse, args.schema, args.vectors)
            options = LongtermOptions(url=url, schema=args.schema)
        else:
            load_sqlite(home, args.rows)
            options = LongtermOptions()
        report["load_s"] = round(time.perf_counter() - started, 1)
        report["retrieval"] = retrieval(options, home)
        for mode in args.modes.split(","):
            # the warm searcher serves server stores only
            report[mode] = cold(options, home, queries, mode, args.cold_runs, searcher_too=args.backend == "postgres")
            report[mode]["warm"] = measure(options, home, queries, mode, args.rounds)
            print(json.dumps({mode: report[mode]}), file=sys.stderr, flush=True)
    report["load_average"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
