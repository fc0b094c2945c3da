"""``pao brief TOPIC``: gather and compose a briefing, print it (or its JSON)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import attrs

from pao_core.config import PaoConfig
from pao_core.errors import PaoError, ValidationError
from pao_core.hookspecs import hookimpl
from pao_core.models import Briefing
from pao_core.output import print_json


@hookimpl
def pao_add_commands(subparsers: argparse._SubParsersAction, config: PaoConfig) -> None:
    parser = subparsers.add_parser("brief", help="print the briefing a new agent would get for TOPIC")
    parser.add_argument("topic", metavar="TOPIC", help="what the agent will work on, in plain words")
    parser.add_argument("--folder", action="append", default=[], metavar="DIR", help="the agent's folder")
    parser.add_argument("--json", action="store_true", help="print JSON (markdown, items, backends, elapsed_ms)")
    parser.add_argument("--raw-unredacted", action="store_true",
                        help="with --json: items' text as stored, secrets NOT redacted (never give this to an agent)")
    parser.add_argument(
        "--write", action="store_true",
        help="deliver it into each --folder as a spawn of the default host would (CONTEXT_BRIEFING.md and "
        "the import block of the host's context file)",
    )
    parser.set_defaults(func=run_brief)


def briefing_json(briefing: Briefing, *, raw_unredacted: bool = False) -> dict[str, Any]:
    """The public ``pao brief --json`` shape: extend it, never break it.

    Items' title and text are redacted (:func:`pao_core.sanitize.clean`) unless ``raw_unredacted``.
    """
    from pao_core.sanitize import clean  # only this path needs it: start-up stays light

    shown = (lambda text: text) if raw_unredacted else clean
    return {
        "markdown": briefing.markdown,
        "items": [{**attrs.asdict(item), "title": shown(item.title), "text": shown(item.text),
                   "timestamp": item.timestamp.isoformat() if item.timestamp else None} for item in briefing.items],
        "backends": {name: {**attrs.asdict(result, filter=attrs.filters.exclude("backend", "items")),
                            "count": result.count} for name, result in briefing.backends.items()},
        "elapsed_ms": briefing.elapsed_ms,
        "content_hash": briefing.content_hash,
        "generated_at": briefing.generated_at.isoformat() if briefing.generated_at else None,
        "chars": len(briefing.markdown),
    }


def run_brief(args: argparse.Namespace, config: PaoConfig) -> int:
    from pao_core.gather import brief  # loaded on use, not at start-up
    from pao_core.plugins import get_plugins  # pluggy, entry points: loaded on use
    from pao_core.sanitize import strip_controls  # only this path needs it: start-up stays light
    from pao_core.topic import check_topic, reject_control  # only this path needs it: start-up stays light

    check_topic(args.topic)
    for folder in args.folder:
        reject_control(folder, "the folder")
    if args.write and not args.folder:
        raise ValidationError("brief --write needs --folder DIR: the folder to write the briefing into")
    folders = [_existing_folder(folder) for folder in args.folder] if args.write else list(args.folder)
    plugins = get_plugins()
    briefing = brief(args.topic, folders=folders, config=config, plugins=plugins)
    deliveries = []
    if args.write:
        deliverers = plugins.briefing_deliverers(config)
        if not deliverers:
            raise ValidationError("brief --write: no installed plugin delivers briefings into a folder")
        deliveries = [deliverers[0].deliver(briefing, folder) for folder in folders]
    if args.json:
        data = briefing_json(briefing, raw_unredacted=args.raw_unredacted)
        if args.write:
            data["delivered"] = [attrs.asdict(delivery) for delivery in deliveries]  # paths as text: print_json
        print_json(data)
    else:
        if deliveries:
            for d in deliveries:
                print(f"wrote {d.briefing_path} and the import block in {d.context_path}")
        else:
            sys.stdout.write(briefing.markdown)
        for name, result in briefing.backends.items():
            if result.status != "ok":
                print(f"pao: backend {name}: {result.status}: {strip_controls(result.error or '')}", file=sys.stderr)
            elif result.note:
                print(f"pao: backend {name}: {strip_controls(result.note)}", file=sys.stderr)
    if not any(result.status == "ok" for result in briefing.backends.values()):
        raise PaoError(_no_answer(briefing))
    return 0


def _no_answer(briefing: Briefing) -> str:
    if not briefing.backends:
        return "no memory store is configured: the briefing holds no memory (see 'pao doctor')"
    failed = ", ".join(f"{name} ({result.status})" for name, result in briefing.backends.items())
    return f"no memory store answered: {failed}; see 'pao doctor'"


def _existing_folder(folder: str) -> str:
    from pao_core.topic import shown  # only this path needs it: start-up stays light

    path = Path(folder).expanduser()
    try:
        is_dir = path.is_dir()
    except OSError:  # a name too long for the file system
        is_dir = False
    if not is_dir:
        raise ValidationError(f"--folder {shown(folder)}: not an existing folder")
    return str(path.resolve())
