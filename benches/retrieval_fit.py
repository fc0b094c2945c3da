#!/usr/bin/env python3
"""Fit the retrieval knobs on one labelled corpus and report them on another.

    .venv/bin/python benches/retrieval_fit.py --fit tests/data/eval:dev --report tests/data/eval2:all [--json]

Both corpora are loaded once each into throwaway stores (through ``pao memory import``
and ``pao history index``, as ``pao eval`` does), then every combination of the grid
below briefs every query of the fitting corpus through the real pipeline and is scored
by ``pao_eval.evaluate.score``. The chosen combination meets precision >= 0.90 and
out-of-domain items <= 0.5 on the fitting corpus and has its highest recall@10, where
recalls within 0.01 of each other count as ties, broken by fewer out-of-domain items, then
higher precision (see ``chosen``); the report corpus is scored with it only. The grid
holds the knobs that decide what semantic search adds: each store's cosine floor, the
standardised floor shared by both, and the longterm store's entity siblings.
Nothing here is read by pao itself.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import itertools
import json
import sys
import tempfile
from pathlib import Path
from typing import Any, Iterator

import attrs

GRID = {
    "longterm_vector_floor": (0.45, 0.50, 0.55),
    "history_vector_floor": (0.30, 0.37, 0.45),
    "standard_floor": (0.0, 3.0),
    "entity_siblings": ("none", "confirmed", "all"),
}
TARGETS = {"precision": 0.90, "ood_items": 0.5}


@contextlib.contextmanager
def knobs(longterm_vector_floor: float, history_vector_floor: float, standard_floor: float,
          entity_siblings: str) -> Iterator[None]:
    """Set the floors for the briefs made inside (module globals, restored after)."""
    from pao_historyworker import search as history_search
    from pao_postgres import retrieval

    ranked, tuning = retrieval.METHODS["ranked"], history_search.Tuning
    retrieval.METHODS["ranked"] = attrs.evolve(ranked, vector_floor=longterm_vector_floor,
                                               vector_standard_floor=standard_floor, entity_siblings=entity_siblings)
    history_search.Tuning = functools.partial(tuning, vector_floor=history_vector_floor,
                                              vector_standard_floor=standard_floor)
    try:
        yield
    finally:
        retrieval.METHODS["ranked"], history_search.Tuning = ranked, tuning


@attrs.frozen
class Loaded:
    corpus: Path
    split: str
    config: Any
    queries: list


def load(spec: str, home: Path, plugins: Any, config: Any) -> Loaded:
    from pao_eval.evaluate import load_queries, load_stores

    corpus, _, split = spec.partition(":")
    # a generous deadline: the figures must not depend on how busy the machine is (on a
    # loaded machine the 2 s default can cut off the vectors of a search)
    eval_config = attrs.evolve(config, home=home, backends={}, gather=attrs.evolve(config.gather, deadline=30.0))
    load_stores(Path(corpus), eval_config, plugins)
    return Loaded(Path(corpus), split or "dev", eval_config, load_queries(Path(corpus), split or "dev"))


def measure(loaded: Loaded, plugins: Any, setting: dict[str, float] | None) -> dict[str, Any]:
    """Score ``loaded`` with ``setting`` (None: pao's shipped defaults)."""
    from pao_eval.evaluate import run_queries, score

    with knobs(**setting) if setting else contextlib.nullcontext():
        runs = run_queries(loaded.queries, config=loaded.config, plugins=plugins, repeat=1)
    failed = {f"{name}: {result.error}" for run in runs for name, result in run.briefing.backends.items()
              if result.status != "ok"}
    if failed:  # a broken store would score as a silent one
        raise SystemExit(f"retrieval_fit: a backend did not answer: {sorted(failed)[0]}")
    report = score(runs, loaded.corpus)
    keep = ("precision", "recall_at_10", "ood_items", "items", "secrets_leaked", "briefings_with_esc")
    return {key: report.get(key) for key in keep}


RECALL_TIE = 0.01
"""Recall differences below this are one or two items on a few dozen queries: ties."""


def chosen(rows: list[tuple[dict[str, float], dict[str, Any]]]) -> tuple[dict[str, float], dict[str, Any]]:
    """Among the settings meeting the targets on the fitting corpus, the highest recall@10;
    within :data:`RECALL_TIE` of it, the fewest out-of-domain items, then the highest precision."""
    meeting = [row for row in rows if row[1]["precision"] >= TARGETS["precision"] and row[1]["ood_items"] <= TARGETS["ood_items"]]
    pool = meeting or rows
    best = max(row[1]["recall_at_10"] for row in pool)
    near = [row for row in pool if row[1]["recall_at_10"] >= best - RECALL_TIE]
    return min(near, key=lambda row: (row[1]["ood_items"], -row[1]["precision"], -row[1]["recall_at_10"]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fit", required=True, metavar="CORPUS:SPLIT")
    parser.add_argument("--report", required=True, metavar="CORPUS:SPLIT")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)

    from pao_core.config import load_config
    from pao_core.plugins import build_plugins

    with tempfile.TemporaryDirectory(prefix="pao-fit-") as tmp:
        config = load_config(environ={"PAO_HOME": tmp})
        plugins = build_plugins()
        fit = load(args.fit, Path(tmp) / "fit", plugins, config)
        report = load(args.report, Path(tmp) / "report", plugins, config)
        rows = []
        for values in itertools.product(*GRID.values()):
            setting = dict(zip(GRID, values))
            rows.append((setting, measure(fit, plugins, setting)))
            print(f"fit {setting}: {rows[-1][1]}", file=sys.stderr, flush=True)
        setting, on_fit = chosen(rows)
        on_report = measure(report, plugins, setting)
        defaults_on_report = measure(report, plugins, None)
    result = {"fit": args.fit, "report": args.report, "chosen": setting, "on_fit": on_fit, "on_report": on_report,
              "defaults_on_report": defaults_on_report, "grid": [{"setting": s, **m} for s, m in rows]}
    if args.json:
        print(json.dumps(result))
    else:
        print(f"fitted on {args.fit}: {setting} -> {on_fit}")
        print(f"reported on {args.report}: {on_report}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
