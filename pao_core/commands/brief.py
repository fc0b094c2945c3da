"""``pao brief TOPIC``: gather and compose a briefing, print it (or its JSON)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from pao_core.config import PaoConfig
from pao_core.hookspecs import hookimpl
from pao_core.models import Briefing


@hookimpl
def pao_add_commands(subparsers: argparse._SubParsersAction, config: PaoConfig) -> None:
    parser = subparsers.add_parser("brief", help="print the briefing a new agent would get for TOPIC")
    parser.add_argument("topic", metavar="TOPIC", help="what the agent will work on, in plain words")
    parser.add_argument("--folder", action="append", default=[], metavar="DIR", help="the agent's folder")
    parser.add_argument("--json", action="store_true", help="print JSON (markdown, items, backends, elapsed_ms)")
    parser.set_defaults(func=run_brief)


def briefing_json(briefing: Briefing) -> dict[str, Any]:
    """The public ``pao brief --json`` shape: extend it, never break it."""
    return {
        "markdown": briefing.markdown,
        "items": [
            {
                "backend": item.backend,
                "id": item.id,
                "title": item.title,
                "text": item.text,
                "timestamp": item.timestamp.isoformat() if item.timestamp else None,
                "score": item.score,
                "rank": item.rank,
                "kind": item.kind,
                "meta": dict(item.meta),
            }
            for item in briefing.items
        ],
        "backends": {
            name: {
                "status": result.status,
                "elapsed_ms": result.elapsed_ms,
                "count": result.count,
                "error": result.error,
            }
            for name, result in briefing.backends.items()
        },
        "elapsed_ms": briefing.elapsed_ms,
    }


def run_brief(args: argparse.Namespace, config: PaoConfig) -> int:
    from pao_core.cli import print_json
    from pao_core.pipeline import brief
    from pao_core.plugins import get_plugins

    briefing = brief(args.topic, folders=args.folder, config=config, plugins=get_plugins())
    if args.json:
        print_json(briefing_json(briefing))
    else:
        sys.stdout.write(briefing.markdown)
        for name, result in briefing.backends.items():
            if result.status != "ok":
                print(f"pao: backend {name}: {result.status}: {result.error}", file=sys.stderr)
    return 0
