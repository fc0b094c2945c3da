"""``pao eval CORPUS_DIR``: measure briefing quality on a labelled corpus."""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from pao_core.config import PaoConfig
from pao_core.errors import ValidationError
from pao_core.hookspecs import hookimpl
from pao_core.output import print_json, print_table


@hookimpl
def pao_add_commands(subparsers: argparse._SubParsersAction, config: PaoConfig) -> None:
    parser = subparsers.add_parser(
        "eval", help="measure briefing quality on a labelled corpus",
        description="Load CORPUS_DIR into throwaway stores, brief every query of the split through the real "
        "pipeline, and score the briefings against the corpus's labels.",
    )
    parser.add_argument("corpus", metavar="CORPUS_DIR", type=Path, help="folder in the layout of the eval corpus")
    parser.add_argument("--split", default="dev", help="query split of split.json (default dev)")
    parser.add_argument("--backends", metavar="NAMES", help="comma list of backends to evaluate (default: all)")
    parser.add_argument("--repeat", type=int, default=3, metavar="N",
                        help="brief each query N times; its latency is their median (default 3)")
    parser.add_argument("--lexical", action="store_true",
                        help="lexical search alone: the stores' semantic search off (to measure what it adds)")
    parser.add_argument("--per-query", action="store_true", help="also print one line per query")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(func=run_eval)


def run_eval(args: argparse.Namespace, config: PaoConfig) -> int:
    from pao_eval.evaluate import comparison_rows, evaluate, evidence_rows  # loaded on use, not at start-up
    from pao_core.plugins import get_plugins  # pluggy, entry points: loaded on use

    backends = None
    if args.backends is not None:
        backends = [name.strip() for name in args.backends.split(",") if name.strip()]
        if not backends:
            raise ValidationError("--backends: name at least one backend")
    if args.repeat < 1:
        raise ValidationError("--repeat: must be at least 1")
    with tempfile.TemporaryDirectory(prefix="pao-eval-") as home:
        report = evaluate(args.corpus, split=args.split, config=config, plugins=get_plugins(), backends=backends,
                          home=Path(home), repeat=args.repeat, semantic=not args.lexical)
    if args.json:
        print_json(report)
        return 0
    print(f"pao eval {report['corpus']} --split {report['split']}: {report['queries']} queries, "
          f"backends {', '.join(report['backends']) or 'none'}")
    if "evidence_recall_at_10" in report:  # a conversational corpus: evidence turns, no labels of domains
        print_table(("figure", "pao"), evidence_rows(report))
        _print_per_query(report, args.per_query)
        return 0
    print_table(("figure", "pao", "original system", "target"), comparison_rows(report))
    extras = {key: report[key] for key in ("briefings_with_esc", "secrets_leaked", "hazard_items_shown",
                                            "superseded_pairs_shown", "superseded_pairs_ordered",
                                            "duplicate_groups_repeated") if key in report}
    print("checks: " + ", ".join(f"{key.replace('_', ' ')} {value}" for key, value in extras.items()))
    _print_per_query(report, args.per_query)
    return 0


def _print_per_query(report: dict, wanted: bool) -> None:
    if wanted:
        for row in report["per_query"]:
            figures = " ".join(f"{k}={row[k]}" for k in ("items", "precision", "recall_at_10", "chars", "latency_ms")
                               if k in row)
            print(f"  {row['qid']} [{row['kind']}] {figures}  {row['topic']}")
