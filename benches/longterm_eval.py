#!/usr/bin/env python3
"""Retrieval quality of the longterm backend's search modes on the eval corpus.

Loads ``tests/data/eval/memory.jsonl`` (a copy of the shared corpus) into a fresh store (embedded SQLite, and a
PostgreSQL server: ``--url`` / ``PAO_TEST_POSTGRES_URL``, else a throwaway cluster),
runs the queries of one split through every mode, and scores the answers against
``labels.jsonl`` (read here for scoring only; pao never reads it). Observation items
only: this is one backend, not the fused briefing.

    .venv/bin/python benches/longterm_eval.py [--eval DIR] [--split dev] [--backend both] [--json]

Definitions (the corpus README's): precision = (relevant + partially relevant) /
returned, averaged over in-domain queries that returned something; recall@10 =
relevant returned in the top 10 / min(10, relevant observations), averaged over
in-domain queries; ood = items returned per out-of-domain query, averaged.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Iterator

import attrs
from pao_postgres.mcpfile import read_memory_file
from pao_postgres.options import LongtermOptions
from pao_postgres.searcher.method import METHODS, Method
from pao_postgres.searcher.retrieval import run_method
from pao_postgres.store.longterm import LongtermStore
from pao_postgres.store.vectors import refresh_vectors
from pao_testing.postgres import interrupt_on_sigterm, postgres_url

DEFAULT_EVAL = Path(__file__).resolve().parents[1] / "tests" / "data" / "eval"

# The modes users can pick, then ablations of the default that show what each step adds
# ("any": the OR of terms, natively ranked, the step between original and ranked).
VARIANTS: dict[str, Method | None] = {
    "original": METHODS["original"],
    "any": Method(coverage=False, entity_names=False),
    "any+coverage (count)": Method(idf=False, entity_names=False),
    "any+coverage (idf)": Method(entity_names=False),
    "any+coverage+names": Method(),
    "ranked (default)": METHODS["ranked"],
    "ranked, lexical only": attrs.evolve(METHODS["ranked"], vectors=False, entity_siblings="none"),
    "ranked, no entity siblings": attrs.evolve(METHODS["ranked"], entity_siblings="none"),
    "ranked, floor 0.2": Method(floor=0.2, min_matches=2),
    "ranked, floor 0.25": Method(floor=0.25, min_matches=2),
    "ranked, floor 0.3": Method(floor=0.3, min_matches=2),
    "ranked, floor 0.3, 1 term": Method(floor=0.3, min_matches=1),
    "ranked, floor 0.3, no bonus": Method(floor=0.3, min_matches=2, name_bonus=0),
    "ranked, floor 0.3, rel 0.5": Method(floor=0.3, min_matches=2, relative=0.5),
    "ranked, floor 0.3, rel 0.6": Method(floor=0.3, min_matches=2, relative=0.6),
    "ranked, floor 0.25, rel 0.5": Method(floor=0.25, min_matches=2, relative=0.5),
    "ranked, floor 0.2, rel 0.5": Method(floor=0.2, min_matches=2, relative=0.5),
    "ranked, count floor 3": Method(idf=False, min_matches=3),
}


def load_eval(folder: Path, split: str) -> tuple[list[dict], dict[str, dict]]:
    wanted = set(json.loads((folder / "split.json").read_text())[split])
    queries = [json.loads(line) for line in (folder / "queries.jsonl").read_text().splitlines() if line.strip()]
    labels = {}
    for line in (folder / "labels.jsonl").read_text().splitlines():
        if line.strip():
            row = json.loads(line)
            labels[row["id"]] = row
    return [q for q in queries if q["qid"] in wanted], labels


def score(queries: list[dict], labels: dict[str, dict], answers: dict[str, list[str]]) -> dict[str, float]:
    precisions, recalls, ood, sizes = [], [], [], []
    for query in queries:
        returned = answers[query["qid"]]
        sizes.append(len(returned))
        if query["kind"] == "ood":
            ood.append(len(returned))
            continue
        relevant = {i for i, row in labels.items() if i.startswith("obs:") and row["subtopic"] == query["subtopic"]}
        if returned:
            good = sum(1 for i in returned if labels.get(i, {}).get("domain") == query["domain"])
            precisions.append(good / len(returned))
        found = sum(1 for i in returned[:10] if i in relevant)
        recalls.append(found / min(10, len(relevant)) if relevant else 0.0)
    return {
        "precision": statistics.fmean(precisions) if precisions else 0.0,
        "recall@10": statistics.fmean(recalls) if recalls else 0.0,
        "ood_items": statistics.fmean(ood) if ood else 0.0,
        "items_per_query": statistics.fmean(sizes) if sizes else 0.0,
        "answered": len(precisions),
    }


def evaluate(store: LongtermStore, queries: list[dict], labels: dict, limit: int) -> dict[str, dict]:
    results = {}
    for name, method in VARIANTS.items():
        answers, timings = {}, []
        for query in queries:
            started = time.perf_counter()
            items = run_method(store.options, store.home, query["topic"], limit, time.monotonic() + 10, method)
            timings.append((time.perf_counter() - started) * 1000)
            answers[query["qid"]] = [item.id for item in items]
        figures = score(queries, labels, answers)
        figures["p50_ms"] = statistics.median(timings)
        results[name] = figures
    return results


@contextlib.contextmanager
def postgres_store(url: str | None, home: Path) -> Iterator[LongtermStore]:
    with contextlib.ExitStack() as stack:
        url = url or stack.enter_context(postgres_url())
        store = LongtermStore(LongtermOptions(url=url, schema="pao_eval"), home)
        with store.engine().begin() as connection:
            connection.exec_driver_sql("DROP SCHEMA IF EXISTS pao_eval CASCADE")
        yield store


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--eval", type=Path, default=DEFAULT_EVAL, help="the eval corpus folder")
    parser.add_argument("--split", default="dev")
    parser.add_argument("--backend", choices=("sqlite", "postgres", "both"), default="both")
    parser.add_argument("--url", help="PostgreSQL URL (default: PAO_TEST_POSTGRES_URL or a throwaway cluster)")
    parser.add_argument("--limit", type=int, default=10)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    interrupt_on_sigterm()  # the throwaway cluster is stopped on SIGTERM too

    queries, labels = load_eval(args.eval, args.split)
    memory = read_memory_file(args.eval / "memory.jsonl")
    report: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="pao-eval-") as home:
        if args.backend in ("sqlite", "both"):
            store = LongtermStore(LongtermOptions(), Path(home))
            store.import_memory(memory)
            refresh_vectors(store)  # as `pao memory import` does: the default mode is semantic + lexical
            report["sqlite"] = evaluate(store, queries, labels, args.limit)
        if args.backend in ("postgres", "both"):
            with postgres_store(args.url, Path(home)) as store:
                store.import_memory(memory)
                refresh_vectors(store)
                report["postgresql"] = evaluate(store, queries, labels, args.limit)
    if args.json:
        json.dump(report, sys.stdout, indent=2)
        print()
        return 0
    print(f"split {args.split}: {len(queries)} queries, limit {args.limit}, observation items only")
    for backend, rows in report.items():
        print(f"\n{backend}\n{'mode':30} {'precision':>9} {'recall@10':>9} {'ood':>5} {'items':>5} {'p50 ms':>7}")
        for name, f in rows.items():
            print(
                f"{name:30} {f['precision']:9.3f} {f['recall@10']:9.3f} {f['ood_items']:5.2f} "
                f"{f['items_per_query']:5.1f} {f['p50_ms']:7.2f}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
