"""Speed of the history backend: indexing, lexical query latency, client round trip.

    .venv/bin/python benches/history_bench.py [--sessions 10000] [--exchanges 10] [--queries 300]
        [--vectors none|model|random]

1. Writes ``--sessions`` synthetic Claude Code sessions (``--exchanges`` exchanges
   each, with tool calls and tool results) in Claude Code's layout, indexes them
   with ``pao history index``'s code and reports the throughput; then appends one
   exchange to one file and times the incremental re-index.
2. Runs ``--queries`` topics (words drawn from the corpus vocabulary) against the
   resulting index (sessions x exchanges exchanges) and reports p50/p95 latency.
3. Starts the real ``pao history serve`` on that index and times the same topics
   through the client in both protocol modes; the round trip on top of the
   server's own search is the client's p50 minus the local search p50.

``--vectors`` (needs the ``embeddings`` extra): ``model`` embeds every exchange with
all-MiniLM-L6-v2 after the text index and reports that throughput separately, so
queries are hybrid; ``random`` stores random unit vectors instead (seconds, not
hours, at 100,000 exchanges), to time hybrid queries at scale: the topic is still
embedded by the model and compared with every stored vector. ``none``: lexical only.
"""

from __future__ import annotations

import argparse
import datetime as dt
import itertools
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from pao_historyworker.backend import HistoryBackend
from pao_historyworker.index import connect, index_transcripts
from pao_historyworker.options import HistoryOptions
from pao_historyworker.search import Tuning, search

WORDS = (
    "notarization sparkle keychain codesign runner worker durable object d1 migration r2 bucket lifecycle dns cname "
    "k3s longhorn replica node drain flux sealed secret tangle diff streaming memory parser release homebrew crate "
    "mcp server scope config zod schema envelope switchboard pane tmux idempotency sqlite wal postgres pgloader cast "
    "cutover sequence cache sccache workflow matrix secret oidc apns fcm token backfill alert classifier dataset label "
    "eval confusion beancount importer csv tax estimate zola pages analytics plausible sourdough levain hydration "
    "starter lightroom ingest exif watermark gallery deploy retry timeout queue latency benchmark profile flamegraph"
).split()
FILLER = "the a we it this that then so and but because when after before with for on in of to".split()


def vocabulary(size: int = 30_000, seed: int = 3) -> list[str]:
    """The topic words first, then made-up words: drawn with Zipf weights, like real text."""
    rng = random.Random(seed)
    made_up = {"".join(rng.choice("bcdfghklmnprstvz") + rng.choice("aeiou") for _ in range(rng.randint(2, 4))) for _ in range(size)}
    words = sorted(made_up - set(WORDS))
    rng.shuffle(words)
    for word in WORDS:  # topic words at random ranks, from common to rare
        words.insert(rng.randrange(0, 3000), word)
    return words


VOCABULARY = vocabulary()
ZIPF = list(itertools.accumulate(1 / (rank + 10) for rank in range(len(VOCABULARY))))
"""Cumulative Zipf weights (``random.choices(cum_weights=...)`` is then O(log n) a draw)."""


def sentence(rng: random.Random, length: int) -> str:
    picks = rng.choices(VOCABULARY, cum_weights=ZIPF, k=length)
    return " ".join(word if rng.random() < 0.6 else rng.choice(FILLER) for word in picks).capitalize() + "."


def write_sessions(root: Path, sessions: int, exchanges: int, seed: int = 7) -> int:
    rng = random.Random(seed)
    start = dt.datetime(2025, 1, 1, tzinfo=dt.timezone.utc)
    total_bytes = 0
    for number in range(sessions):
        project = f"/Users/dev/code/project-{number % 200}"
        folder = root / project.replace("/", "-")
        folder.mkdir(parents=True, exist_ok=True)
        session = str(uuid.UUID(int=rng.getrandbits(128)))
        stamp = start + dt.timedelta(minutes=number * 7)
        lines, parent = [], None
        for _ in range(exchanges):
            for kind, content in (
                ("user", sentence(rng, rng.randint(6, 20))),
                ("assistant", [{"type": "text", "text": sentence(rng, rng.randint(20, 60))},
                               {"type": "tool_use", "id": "t", "name": "Bash", "input": {"command": "make test"}}]),
                ("user", [{"type": "tool_result", "tool_use_id": "t", "content": sentence(rng, 15)}]),
                ("assistant", [{"type": "text", "text": sentence(rng, rng.randint(10, 30))}]),
            ):
                line_id = str(uuid.UUID(int=rng.getrandbits(128)))
                stamp += dt.timedelta(seconds=30)
                lines.append(json.dumps({
                    "type": kind, "uuid": line_id, "parentUuid": parent, "sessionId": session,
                    "timestamp": stamp.isoformat().replace("+00:00", "Z"), "cwd": project, "gitBranch": "main",
                    "message": {"role": kind, "content": content},
                }))
                parent = line_id
        data = "\n".join(lines) + "\n"
        (folder / f"{session}.jsonl").write_text(data)
        total_bytes += len(data)
    return total_bytes


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def topics(count: int, seed: int = 11) -> list[str]:
    """Half the topics from the topic words, half drawn like the text itself."""
    rng = random.Random(seed)
    return [
        " ".join(rng.sample(WORDS, rng.randint(2, 6)) if n % 2 else rng.choices(VOCABULARY, cum_weights=ZIPF, k=rng.randint(3, 8)))
        for n in range(count)
    ]


def timed(fn, queries: list[str]) -> list[float]:
    fn(queries[0])  # warm caches and connections
    out = []
    for query in queries:
        started = time.perf_counter()
        fn(query)
        out.append((time.perf_counter() - started) * 1000)
    return out


def add_vectors(conn, mode: str) -> dict[str, object]:
    """Give every exchange a vector: the model's (timed) or a random unit one."""
    if mode == "none":
        return {}
    from pao_historyworker import vectors

    if mode == "model":
        report = vectors.embed_missing(conn)
        return {"embedded": report.embedded, "embed_s": report.elapsed_s,
                "embedded_per_s": round(report.embedded / max(report.elapsed_s, 1e-9), 1)}
    import numpy as np

    rowids = [rowid for (rowid,) in conn.execute("SELECT rowid FROM exchanges")]
    random_vectors = np.random.default_rng(7).standard_normal((len(rowids), 384)).astype(np.float32)
    random_vectors /= np.linalg.norm(random_vectors, axis=1, keepdims=True)
    with conn:
        conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('vectors_recipe', ?)", (vectors.RECIPE,))
        conn.executemany("INSERT OR REPLACE INTO vectors(rowid, vector) VALUES (?, ?)",
                         zip(rowids, (row.tobytes() for row in random_vectors)))
    started = time.perf_counter()
    vectors.nearest(conn, "the first vector search reads the matrix", floor=2.0, limit=1)  # a floor no cosine reaches
    return {"random_vectors": len(rowids), "first_vector_search_s": round(time.perf_counter() - started, 2)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=10_000)
    parser.add_argument("--exchanges", type=int, default=10)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--vectors", choices=("none", "model", "random"), default="none")
    args = parser.parse_args(argv)
    results: dict[str, object] = {"sessions": args.sessions, "exchanges_per_session": args.exchanges}
    with tempfile.TemporaryDirectory() as tmp:
        root, home = Path(tmp) / "projects", Path(tmp) / "home"
        size = write_sessions(root, args.sessions, args.exchanges)
        conn = connect(home / "history.sqlite3", create=True)
        report = index_transcripts(conn, root, embed=False)
        results.update(
            transcript_mb=round(size / 1e6, 1),
            index_s=report.elapsed_s,
            sessions_per_s=round(args.sessions / report.elapsed_s),
            exchanges_per_s=round(report.exchanges_added / report.elapsed_s),
            mb_per_s=round(size / 1e6 / report.elapsed_s, 1),
        )
        one = next(root.glob("*/*.jsonl"))
        with one.open("a") as handle:
            handle.write(json.dumps({"type": "user", "uuid": "late", "sessionId": "late", "timestamp": "2026-01-01T00:00:00Z",
                                     "cwd": "/x", "message": {"role": "user", "content": "late words"}}) + "\n")
        results["reindex_after_append_s"] = index_transcripts(conn, root, embed=False).elapsed_s
        results.update(add_vectors(conn, args.vectors))
        results["index_mb"] = round((home / "history.sqlite3").stat().st_size / 1e6, 1)

        queries = topics(args.queries)
        tuning = Tuning(semantic=args.vectors != "none")
        search(conn, "warm up", 10, tuning)  # loads the model and the vector matrix
        local = timed(lambda q: search(conn, q, 10, tuning), queries)
        results["exchanges"] = conn.execute("SELECT count(*) FROM exchanges").fetchone()[0]
        results["query_p50_ms"] = round(statistics.median(local), 2)
        results["query_p95_ms"] = round(percentile(local, 0.95), 2)
        conn.close()

        env = {**os.environ, "PAO_HOME": str(home), "PAO_LOAD_PLUGINS": "pao-historyworker"}
        env.pop("PAO_HISTORY_URL", None)
        server = subprocess.Popen([str(Path(sys.executable).with_name("pao")), "history", "serve", "--port", "0"],
                                  env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        try:
            url = server.stdout.readline().strip().split("=", 1)[1]
            ping = HistoryBackend(HistoryOptions(url=url), home=home).client
            pings = timed(lambda q: ping.call("ping", {}, time.monotonic() + 10), queries)
            results["ping_round_trip_p50_ms"] = round(statistics.median(pings), 2)
            for protocol in ("jsonrpc", "mcp"):
                backend = HistoryBackend(HistoryOptions(url=url, protocol=protocol), home=home)
                remote = timed(lambda q: backend.search(q, 10, time.monotonic() + 10), queries)
                results[f"{protocol}_client_p50_ms"] = round(statistics.median(remote), 2)
                results[f"{protocol}_round_trip_over_search_p50_ms"] = round(statistics.median(remote) - statistics.median(local), 2)
        finally:
            server.terminate()
            server.wait(timeout=10)
    print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
