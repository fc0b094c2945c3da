#!/usr/bin/env python3
"""Which vector gate carries from one corpus to another: raw cosine or a rescaled one.

    .venv/bin/python benches/retrieval_gates.py [--corpora tests/data/eval:dev tests/data/eval2:all] [--json]

A vector gate decides whether a store's nearest item to a topic is evidence at all. For
each query of both corpora and each store, the store's items are ranked by cosine to the
topic (the stores' own ``nearest``), and the top item is described by several statistics:

* ``cosine``: the raw cosine (what pao ships, one floor per store);
* ``z``: standardised against this topic's cosines to the whole store;
* ``top-mean10``: the top's lead over the mean of the next ten (relative to the query's own best);
* ``cosine-mean``: the top less the mean cosine of the store to this topic;
* ``over-background``: the top less the store's background level, the mean + 2 sd of the best
  cosines that generic topics (``BACKGROUND``, about nothing in particular) reach in that store.

Each statistic's gate is set where the fitting corpus's control (out-of-domain) topics
stop: just above the highest value any control reaches. The report corpus is then gated
at that level: how many of its in-domain topics keep a relevant top item (same subtopic),
and how many of its controls get through. A gate that generalises keeps relevant tops
and lets no control through, both ways. Labels are read here for scoring only.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import attrs

BACKGROUND = (
    "set up a Kubernetes ingress with TLS certificates", "write unit tests for a React form component",
    "migrate a MySQL database to a new server", "configure nginx as a reverse proxy with caching",
    "debug a memory leak in a Node.js service", "add OAuth login with Google to a web app",
    "speed up a slow SQL query with an index", "set up a Python virtual environment and pin dependencies",
    "write a bash script to back up a folder every night", "refactor a large class into smaller modules",
    "fix a flaky end-to-end test in the CI pipeline", "deploy a static website to a CDN",
    "parse a CSV file and load it into a data frame", "build a REST API with pagination and filtering",
    "set up logging and metrics for a microservice", "upgrade a Java project to a newer JDK",
    "train an image classifier on a small dataset", "write documentation for a command-line tool",
    "resolve a git merge conflict in a rebase", "set up a VPN between two offices",
    "plan a birthday party for a child", "cook a vegetarian lasagna for six people",
    "choose running shoes for a first marathon", "learn to play chords on the guitar",
    "fix a leaking tap in the kitchen", "prepare a tax return as a self-employed person",
    "organise a family holiday to the seaside", "repot houseplants and choose soil",
    "buy a used car and check its history", "write a cover letter for a job application",
    "train a puppy to walk on a lead", "knit a wool scarf for winter",
    "set up a home office with a standing desk", "compare mobile phone plans",
    "replace a bicycle inner tube", "start a vegetable garden on a balcony",
    "write a short story for a competition", "clean and season a cast iron pan",
    "book a dentist appointment and an insurance claim", "learn the basics of chess openings",
)
STATISTICS = ("cosine", "z", "top-mean10", "cosine-mean", "over-background")


def ranked(loaded: Any, store: str, topic: str) -> list[tuple[list[str], float]]:
    """Every item of ``store`` as (its corpus ids, cosine to ``topic``), best first."""
    deadline = time.monotonic() + 60
    if store == "longterm":
        from pao_postgres.options import LongtermOptions
        from pao_postgres.searcher.method import METHODS
        from pao_postgres.searcher.sqlite_read import file_reading
        from pao_postgres.searcher.vectors import _observations, nearest

        options = loaded.config.options("backends", "longterm", LongtermOptions)
        method = attrs.evolve(METHODS["ranked"], vector_floor=-2.0, vector_candidates=10**6)
        path = options.sqlite_file(loaded.config.home)
        with file_reading(path, deadline) as rows:
            near = nearest(str(path), rows, options, topic, method, deadline)
            names = {row.id: f"obs:{row.name}#{row.position}"
                     for row in _observations(options, rows, "id", [key for key, _ in near], True)}
        return [([names[key]], cosine) for key, cosine in near]
    from pao_eval.evaluate import covered_ids
    from pao_historyworker import search, vectors
    from pao_historyworker.options import HistoryOptions

    options = loaded.config.options("backends", "history", HistoryOptions)
    conn = sqlite3.connect(options.index_path(loaded.config.home))
    try:
        near = vectors.nearest(conn, topic, -2.0, 10**6, deadline)
        items = search._items(conn, near)
    finally:
        conn.close()
    return [(covered_ids(item), cosine) for item, (_, cosine) in zip(items, near)]


def describe(cosines: list[float], background: float) -> dict[str, float]:
    import numpy as np

    values = np.array(cosines)
    top = float(values[0])
    return {"cosine": top, "z": (top - values.mean()) / (values.std() or 1.0), "top-mean10": top - values[1:11].mean(),
            "cosine-mean": top - values.mean(), "over-background": top - background}


def tops(loaded: Any, labels: dict[str, dict]) -> list[dict[str, Any]]:
    """Per query and store: the top item's statistics and whether it is relevant."""
    import numpy as np

    rows = []
    for store in ("longterm", "history"):
        best = [ranked(loaded, store, topic)[0][1] for topic in BACKGROUND]
        background = float(np.mean(best) + 2 * np.std(best))
        for query in loaded.queries:
            items = ranked(loaded, store, query.topic)
            relevant = any(labels.get(i, {}).get("subtopic") == query.subtopic for i in items[0][0])
            rows.append({"store": store, "qid": query.qid, "control": query.kind == "ood",
                         "relevant": relevant and query.kind != "ood",
                         **describe([cosine for _, cosine in items], background)})
    return rows


def transfer(fit: list[dict], report: list[dict], store: str, statistic: str) -> dict[str, Any]:
    gate = max(row[statistic] for row in fit if row["store"] == store and row["control"])
    mine = [row for row in report if row["store"] == store]
    relevant = [row for row in mine if row["relevant"]]
    return {"gate": round(float(gate), 3), "relevant_tops_kept": int(sum(row[statistic] > gate for row in relevant)),
            "relevant_tops": len(relevant),
            "controls_through": int(sum(row[statistic] > gate for row in mine if row["control"])),
            "controls": sum(row["control"] for row in mine)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpora", nargs=2, default=("tests/data/eval:dev", "tests/data/eval2:all"), metavar="CORPUS:SPLIT")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)

    from pao_core.plugins import load_config
    from pao_core.plugins import build_plugins

    sys.path.insert(0, str(Path(__file__).parent))
    from retrieval_fit import load

    with tempfile.TemporaryDirectory(prefix="pao-gates-") as tmp:
        config = load_config(environ={"PAO_HOME": tmp})
        plugins = build_plugins()
        found = {}
        for n, spec in enumerate(args.corpora):
            loaded = load(spec, Path(tmp) / str(n), plugins, config)
            labels = {row["id"]: row for row in map(json.loads, (loaded.corpus / "labels.jsonl").read_text().splitlines())
                      if row}
            found[loaded.name] = tops(loaded, labels)
    result = [{"fit": fit, "report": report, "store": store, "statistic": statistic,
               **transfer(found[fit], found[report], store, statistic)}
              for fit, report in itertools.permutations(found, 2) for store in ("longterm", "history")
              for statistic in STATISTICS]
    if args.json:
        print(json.dumps(result))
        return 0
    print("gate = just above the fitting corpus's highest control; on the other corpus: relevant top items kept, "
          "controls let through")
    for row in result:
        print(f"fit {row['fit']} -> {row['report']}  {row['store']:8} {row['statistic']:15} gate {row['gate']:7.3f}: "
              f"kept {row['relevant_tops_kept']}/{row['relevant_tops']}, controls through "
              f"{row['controls_through']}/{row['controls']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
