"""Retrieval quality of the history backend on the labelled eval corpus (shared/eval).

    .venv/bin/python benches/history_eval.py [--eval DIR] [--split dev] [--limit 10] [-v]

Indexes the corpus's transcripts into a temporary index, runs each query of the
split through the backend's own search, and scores the answers with labels.jsonl
(read here, never by pao). An exchange item is scored by the label of its user
line; for recall it is credited with every labelled line it carries in
``meta["uuids"]``. Figures: precision (relevant or partially relevant items over
items returned, per in-domain query that returned items), recall@10 (relevant
message lines returned over min(10, relevant message lines that exist)),
out-of-domain items per out-of-domain query, and search latency.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import attrs

from pao_historyworker.index import connect, index_transcripts
from pao_historyworker.search import Tuning, search

REPO = Path(__file__).resolve().parents[1]
DEFAULT_EVAL = next((p for p in (REPO / "tests" / "data" / "eval", REPO.parent / "shared" / "eval") if p.is_dir()), REPO)


def load(eval_dir: Path, split: str) -> tuple[list[dict], dict[str, dict]]:
    wanted = set(json.loads((eval_dir / "split.json").read_text())[split])
    queries = [q for q in map(json.loads, (eval_dir / "queries.jsonl").read_text().splitlines()) if q["qid"] in wanted]
    labels = {row["id"]: row for row in map(json.loads, (eval_dir / "labels.jsonl").read_text().splitlines())}
    return queries, labels


def score(queries: list[dict], labels: dict[str, dict], answers: dict[str, list], latencies: list[float]) -> dict:
    precisions, strict, recalls, ood_counts, sizes = [], [], [], [], []
    rows = []
    for query in queries:
        items = answers[query["qid"]]
        sizes.append(len(items))
        if query["kind"] == "ood":
            ood_counts.append(len(items))
            rows.append((query["qid"], "ood", len(items), None, None))
            continue
        good = exact = 0
        covered: set[str] = set()
        for item in items:
            label = labels.get(item.id)
            if label and label["domain"] == query["domain"]:
                good += 1
                exact += label["subtopic"] == query["subtopic"]
            session = item.meta["session_id"]
            for uuid in item.meta["uuids"]:
                line = labels.get(f"msg:{session}:{uuid}")
                if line and line["subtopic"] == query["subtopic"]:
                    covered.add(f"msg:{session}:{uuid}")
        relevant = sum(1 for key, row in labels.items() if key.startswith("msg:") and row["subtopic"] == query["subtopic"])
        # a subtopic with no message lines (its facts live in other stores) has no recall to measure here
        recall = min(1.0, len(covered) / min(10, relevant)) if relevant else None
        precision = good / len(items) if items else None
        if precision is not None:
            precisions.append(precision)
            strict.append(exact / len(items))
        if recall is not None:
            recalls.append(recall)
        rows.append((query["qid"], query["style"], len(items), precision, recall))
    ordered = sorted(latencies)
    return {
        "queries": len(queries),
        "precision": round(statistics.mean(precisions), 3) if precisions else None,
        "subtopic_precision": round(statistics.mean(strict), 3) if strict else None,
        "in_domain_with_items": len(precisions),
        "in_domain_with_message_labels": len(recalls),
        "recall_at_10": round(statistics.mean(recalls), 3) if recalls else None,
        "ood_items": round(statistics.mean(ood_counts), 2) if ood_counts else None,
        "items_per_query": round(statistics.mean(sizes), 2),
        "latency_p50_ms": round(ordered[len(ordered) // 2] * 1000, 2),
        "latency_max_ms": round(ordered[-1] * 1000, 2),
        "rows": rows,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--eval", type=Path, default=DEFAULT_EVAL, help="the eval corpus folder")
    parser.add_argument("--split", default="dev")
    parser.add_argument("--limit", type=int, default=10)
    parser.add_argument("--min-coverage", type=float, default=Tuning().min_coverage)
    parser.add_argument("--relative-floor", type=float, default=Tuning().relative_floor)
    parser.add_argument("--session-weight", type=float, default=Tuning().session_weight)
    parser.add_argument("--coverage-power", type=float, default=Tuning().coverage_power)
    parser.add_argument("-v", "--verbose", action="store_true", help="one line per query")
    args = parser.parse_args(argv)
    tuning = attrs.evolve(Tuning(), min_coverage=args.min_coverage, relative_floor=args.relative_floor, session_weight=args.session_weight,
        coverage_power=args.coverage_power,
    )
    queries, labels = load(args.eval, args.split)
    with tempfile.TemporaryDirectory() as tmp:
        conn = connect(Path(tmp) / "history.sqlite3", create=True)
        index_transcripts(conn, args.eval / "transcripts")
        answers, latencies = {}, []
        for query in queries:
            started = time.perf_counter()
            answers[query["qid"]] = search(conn, query["topic"], args.limit, tuning)
            latencies.append(time.perf_counter() - started)
        conn.close()
    report = score(queries, labels, answers, latencies)
    rows = report.pop("rows")
    if args.verbose:
        for qid, style, count, precision, recall in rows:
            shown = "-" if precision is None else f"{precision:.2f}"
            print(f"{qid} {style:12} items={count:2} precision={shown:>4} recall={'-' if recall is None else f'{recall:.2f}'}")
    print(json.dumps({"tuning": attrs.asdict(tuning), **report}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
