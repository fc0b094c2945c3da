#!/usr/bin/env python3
"""Fit the retrieval knobs on each labelled corpus and report them on the other, both ways.

    .venv/bin/python benches/retrieval_fit.py [--corpora tests/data/eval:dev tests/data/eval2:all] [--json]

Both corpora are loaded once each into throwaway stores (through the ``pao_load_corpus``
hook, as ``pao eval`` does: observations and exchanges with their vectors), then every
setting of the grid below briefs every query of both corpora through the real pipeline
and is scored by ``pao_eval.evaluate.score``. For each direction (fit on one corpus,
report on the other) the setting is chosen on the fitting corpus alone (see ``chosen``)
and the other corpus's figures at that setting are reported; the code's shipped
defaults are scored on both, and checked to be among each fit's near-best settings
(``near_best``): one set of constants that neither corpus alone would reject. The grid holds the two thresholds semantic search has: the
cosine a vector hit needs in each store (a property of the model and of what a store
embeds, see ``benches/retrieval_gates.py`` for why not a per-query or per-store rescaling).
Entity siblings, related entities and session siblings are structure, not thresholds,
and stay as shipped. Nothing here is read by pao itself.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import itertools
import json
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any, Iterator

import attrs

GRID = {
    "longterm_vector_floor": (0.44, 0.46, 0.48, 0.50, 0.52, 0.54, 0.56, 0.58, 0.60),
    "history_vector_floor": (0.31, 0.33, 0.35, 0.37, 0.39, 0.41, 0.43, 0.45),
}
TARGETS = {"precision": 0.90, "recall_at_10": 0.70, "ood_items": 0.5}
DEFAULT_CORPORA = ("tests/data/eval:dev", "tests/data/eval2:all")


@contextlib.contextmanager
def knobs(longterm_vector_floor: float, history_vector_floor: float) -> Iterator[None]:
    """Set the floors for the briefs made inside (module globals, restored after)."""
    from pao_historyworker import backend as history_backend
    from pao_historyworker import search as history_search
    from pao_postgres.searcher import retrieval

    # The history backend binds Tuning when it is imported: patch the name it calls, or the
    # floor of the first setting would stay for the whole grid.
    ranked, tuning = retrieval.METHODS["ranked"], history_search.Tuning
    retrieval.METHODS["ranked"] = attrs.evolve(ranked, vector_floor=longterm_vector_floor)
    history_backend.Tuning = functools.partial(tuning, vector_floor=history_vector_floor)
    try:
        yield
    finally:
        retrieval.METHODS["ranked"], history_backend.Tuning = ranked, tuning


def shipped() -> dict[str, float]:
    """The floors the code ships (what ``pao brief`` uses)."""
    from pao_historyworker.search import Tuning
    from pao_postgres.searcher.retrieval import METHODS

    return {"longterm_vector_floor": METHODS["ranked"].vector_floor, "history_vector_floor": Tuning().vector_floor}


@attrs.frozen
class Loaded:
    name: str
    corpus: Path
    config: Any
    queries: list


def load(spec: str, home: Path, plugins: Any, config: Any) -> Loaded:
    from pao_eval.evaluate import load_queries, load_stores

    corpus, _, split = spec.partition(":")
    # a generous deadline: the figures must not depend on how busy the machine is (on a
    # loaded machine the 2 s default can cut off the vectors of a search)
    eval_config = attrs.evolve(config, home=home, backends={}, gather=attrs.evolve(config.gather, deadline=30.0))
    load_stores(Path(corpus), eval_config, plugins)
    return Loaded(f"{corpus}:{split or 'dev'}", Path(corpus), eval_config, load_queries(Path(corpus), split or "dev"))


def measure(loaded: Loaded, plugins: Any, setting: dict[str, float]) -> dict[str, Any]:
    """Score ``loaded`` with ``setting``."""
    from pao_eval.evaluate import run_queries, score

    with knobs(**setting):
        runs = run_queries(loaded.queries, config=loaded.config, plugins=plugins, repeat=1)
    failed = {f"{name}: {result.error}" for run in runs for name, result in run.briefing.backends.items()
              if result.status != "ok"}
    if failed:  # a broken store would score as a silent one
        raise SystemExit(f"retrieval_fit: a backend did not answer: {sorted(failed)[0]}")
    report = score(runs, loaded.corpus)
    recalls = [row["recall_at_10"] for row in report["per_query"] if "recall_at_10" in row]
    keep = ("precision", "recall_at_10", "ood_items", "items", "secrets_leaked", "briefings_with_esc")
    return {**{key: report.get(key) for key in keep},
            "recall_se": round(statistics.stdev(recalls) / len(recalls) ** 0.5, 4) if len(recalls) > 1 else 0.0}


def meets(figures: dict[str, Any]) -> bool:
    return (figures["precision"] >= TARGETS["precision"] and figures["recall_at_10"] >= TARGETS["recall_at_10"]
            and figures["ood_items"] <= TARGETS["ood_items"] and not figures.get("secrets_leaked"))


def near_best(rows: list[tuple[dict[str, float], dict[str, Any]]]) -> list[tuple[dict[str, float], dict[str, Any]]]:
    """The settings as good as the best on the fitting corpus, within the noise: among those
    meeting the precision and out-of-domain targets, recall@10 at least the best one's less
    its standard error over the queries (the one-standard-error rule)."""
    meeting = [row for row in rows if row[1]["precision"] >= TARGETS["precision"]
               and row[1]["ood_items"] <= TARGETS["ood_items"]] or rows
    best = max(meeting, key=lambda row: row[1]["recall_at_10"])
    return [row for row in meeting if row[1]["recall_at_10"] >= best[1]["recall_at_10"] - best[1]["recall_se"]]


def chosen(rows: list[tuple[dict[str, float], dict[str, Any]]]) -> tuple[dict[str, float], dict[str, Any]]:
    """Of the :func:`near_best` settings, the most conservative: fewest items per briefing, then
    the highest floors. A recall gain smaller than the noise of a few dozen queries does not
    buy a lower floor, which is what lets stray near-misses in on memory the fit never saw."""
    return min(near_best(rows), key=lambda row: (row[1]["items"], *(-value for value in row[0].values())))


def two_way(grids: dict[str, list[tuple[dict[str, float], dict[str, Any]]]],
            defaults: dict[str, float]) -> list[dict[str, Any]]:
    """For each ordered pair of corpora: the setting chosen on the first, its figures on both,
    and whether the shipped setting is as good as that choice on the fitting corpus."""
    directions = []
    for fit, report in itertools.permutations(grids, 2):
        setting, on_fit = chosen(grids[fit])
        on_report = next(figures for values, figures in grids[report] if values == setting)
        directions.append({"fit": fit, "report": report, "chosen": setting, "on_fit": on_fit, "on_report": on_report,
                           "met": meets(on_report),
                           "shipped_near_best": any(values == defaults for values, _ in near_best(grids[fit]))})
    return directions


def _row(figures: dict[str, Any]) -> str:
    return (f"{figures['precision'] * 100:.1f}% / {figures['recall_at_10'] * 100:.1f}% / {figures['ood_items']:.2f}"
            f" (secrets {figures.get('secrets_leaked', 0)})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpora", nargs=2, default=DEFAULT_CORPORA, metavar="CORPUS:SPLIT")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)

    from pao_core.plugins import load_config
    from pao_core.plugins import build_plugins

    with tempfile.TemporaryDirectory(prefix="pao-fit-") as tmp:
        config = load_config(environ={"PAO_HOME": tmp})
        plugins = build_plugins()
        corpora = [load(spec, Path(tmp) / str(n), plugins, config) for n, spec in enumerate(args.corpora)]
        grids: dict[str, list] = {loaded.name: [] for loaded in corpora}
        for values in itertools.product(*GRID.values()):
            setting = dict(zip(GRID, values))
            for loaded in corpora:
                grids[loaded.name].append((setting, measure(loaded, plugins, setting)))
            print(f"{setting}: " + " | ".join(_row(grids[c.name][-1][1]) for c in corpora), file=sys.stderr, flush=True)
        defaults = shipped()
        on_defaults = {loaded.name: measure(loaded, plugins, defaults) for loaded in corpora}
    directions = two_way(grids, defaults)
    result = {"targets": TARGETS, "directions": directions, "shipped": defaults,
              "shipped_figures": on_defaults, "shipped_met": {name: meets(f) for name, f in on_defaults.items()},
              "grid": {name: [{"setting": s, **f} for s, f in rows] for name, rows in grids.items()}}
    if args.json:
        print(json.dumps(result))
        return 0
    print("precision / recall@10 / out-of-domain items per control query")
    for d in directions:
        print(f"fitted on {d['fit']}: {d['chosen']} -> {_row(d['on_fit'])}")
        print(f"  reported on {d['report']} (not fitted): {_row(d['on_report'])} {'meets' if d['met'] else 'MISSES'}"
              f" the targets; the shipped setting is {'' if d['shipped_near_best'] else 'NOT '}as good as the fit's"
              f" choice on {d['fit']}")
    for name, figures in on_defaults.items():
        print(f"shipped {defaults} on {name}: {_row(figures)} {'meets' if meets(figures) else 'MISSES'} the targets")
    return 0


if __name__ == "__main__":
    sys.exit(main())
