"""``pao memory``: init, import, add, stats and search on the longterm store."""

from __future__ import annotations

import argparse
import stat
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import attrs

from pao_core.errors import PaoError, ValidationError
from pao_core.output import print_json
from pao_core.models import Provenance, by_agent, parse_timestamp
from pao_core.sanitize import clean, clean_inline, clean_item, strip_controls
from pao_postgres import BACKEND_NAME, writes
from pao_postgres.writes import open_store
from pao_postgres.backend import LongtermBackend
from pao_postgres.items import observation_too_long
from pao_postgres.mcpfile import memory_lines, read_memory_file
from pao_postgres.searcher.provenance import attach
from pao_postgres.options import MODES, LongtermOptions, memory_file

if TYPE_CHECKING:
    from pao_core.config import PaoConfig
    from pao_postgres.store.longterm import LongtermStore

READ_DEADLINE = 10.0


def add_memory_commands(subparsers: argparse._SubParsersAction) -> None:
    memory = subparsers.add_parser("memory", help="longterm memory store (plugin pao-postgres)")
    actions = memory.add_subparsers(dest="memory_command", metavar="ACTION", required=True)

    init = actions.add_parser("init", help="create the schema and its indexes (idempotent)")
    init.add_argument("--json", action="store_true", help="print JSON")
    init.set_defaults(func=run_init)
    writes.add_write_commands(actions)

    add = actions.add_parser("add", help="append one observation to an entity (created when new)")
    add.add_argument("entity", metavar="ENTITY", help="the entity's name")
    add.add_argument("text", metavar="TEXT", help="the observation")
    add.add_argument("--type", dest="entity_type", default="", help="entity type for a new entity")
    add.add_argument("--json", action="store_true", help="print JSON")
    add.set_defaults(func=run_add)

    stats = actions.add_parser("stats", help="where the store is and what it holds")
    stats.add_argument("--json", action="store_true", help="print JSON")
    stats.set_defaults(func=run_stats)

    export = actions.add_parser("export", help="write the store as an MCP memory-server JSONL file")
    export.add_argument("file", metavar="FILE", type=Path, help="the file to write (0600)")
    export.add_argument("--force", action="store_true", help="replace FILE when it exists")
    export.add_argument("--json", action="store_true", help="print JSON")
    export.set_defaults(func=run_export)

    forget = actions.add_parser("forget", help="remove an entity (or one of its observations) from pao's store")
    forget.add_argument("entity", metavar="ENTITY", help="the entity's name")
    forget.add_argument("--observation", metavar="TEXT", help="remove only this observation (its exact text)")
    forget.add_argument("--json", action="store_true", help="print JSON")
    forget.set_defaults(func=run_forget)

    review = actions.add_parser("review", help="list the facts agents wrote; keep (make them yours) or forget them")
    review.add_argument("--keep", metavar="ID", type=int, nargs="+", default=[], help="make these facts yours")
    review.add_argument("--forget", metavar="ID", type=int, nargs="+", default=[], help="delete these facts")
    review.add_argument("--json", action="store_true", help="print JSON")
    review.set_defaults(func=run_review)

    searcher = actions.add_parser("searcher", help="the warm searcher of a server store: whether it runs, or stop it")
    searcher.add_argument("action", choices=("status", "stop"),
                          help="status: this store's; stop: every one of yours, and every warm brief server")
    searcher.add_argument("--json", action="store_true", help="print JSON")
    searcher.set_defaults(func=run_searcher)

    search = actions.add_parser("search", help="search the store as `pao brief` does")
    search.add_argument("topic", metavar="TOPIC")
    search.add_argument("--mode", choices=MODES, help="override the configured mode")
    search.add_argument("--limit", type=int, default=10)
    search.add_argument("--json", action="store_true", help="print JSON")
    search.add_argument("--raw-unredacted", action="store_true",
                        help="show text as stored, secrets NOT redacted (never give this to an agent)")
    search.set_defaults(func=run_search)


def run_init(args: argparse.Namespace, config: PaoConfig) -> int:
    store = open_store(config)
    store.init()
    if args.json:
        print_json({"store": store.describe(), "ready": True})
    else:
        print(f"schema ready in {store.describe()}")
    return 0


def load_corpus(corpus: Path, config: PaoConfig) -> str | None:
    """``pao eval``: the corpus's ``memory.jsonl`` imported into the store, as ``pao memory import`` does."""
    memory_file = corpus / "memory.jsonl"
    if not memory_file.exists():
        return None
    store = open_store(config)
    counts = store.import_memory(read_memory_file(memory_file))
    vectors = writes.refresh_vectors(store)
    return f"{memory_file.name}: {counts.entities} entities, {counts.observations} observations ({vectors.mode})"


def run_add(args: argparse.Namespace, config: PaoConfig) -> int:
    if not args.entity.strip() or not args.text.strip():
        raise ValidationError("memory add: ENTITY and TEXT must not be empty")
    if "\x00" in args.entity + args.text:
        raise ValidationError("memory add: ENTITY and TEXT must not contain NUL characters")
    if observation_too_long(args.text):
        raise ValidationError(f"memory add: {observation_too_long(args.text)}")
    store = open_store(config)
    item = store.add(args.entity, args.text, args.entity_type)
    writes.refresh_vectors(store)
    if args.json:
        print_json(item_json(item))
    else:
        print(f"added {item.id}")
    return 0


def run_stats(args: argparse.Namespace, config: PaoConfig) -> int:
    from pao_postgres.store.vectors import retrieval_status  # not needed until this runs: start-up stays light

    store = open_store(config)
    stats = store.stats(time.monotonic() + READ_DEADLINE)
    stats["retrieval"] = retrieval_status(store, stats["observations"], time.monotonic() + READ_DEADLINE)
    if (path := memory_file(store.options)) is not None:
        from pao_postgres.store.filebatches import describe  # not needed until this runs: start-up stays light

        stats["memory_file"] = describe(store.options, store.home, path, time.monotonic() + READ_DEADLINE)
    if args.json:
        print_json(stats)
        return 0
    for key, value in stats.items():
        print(f"{key}: {value}")
    return 0


def run_searcher(args: argparse.Namespace, config: PaoConfig) -> int:
    from pao_postgres.searcher import warm  # sockets: only for this command

    options = config.options("backends", BACKEND_NAME, LongtermOptions)
    if args.action == "stop":
        from pao_postgres.warm_brief import servers  # the warm brief servers: stopped with the searchers

        stopped = warm.stop_all(time.monotonic() + READ_DEADLINE) + [
            found["pid"] for found in servers(time.monotonic() + READ_DEADLINE, "stop").values() if found and "pid" in found]
        if args.json:
            print_json({"stopped": stopped})
        else:
            print(f"stopped {len(stopped)} warm searcher and brief server process{'es' if len(stopped) != 1 else ''}"
                  + (f" (pid {', '.join(map(str, stopped))})" if stopped else ""))
        return 0
    line = (warm.describe(options, config.home, BACKEND_NAME, time.monotonic() + READ_DEADLINE) if options.url.strip()
            else "warm searcher: not used (the store is the embedded SQLite file)")
    if args.json:
        found = warm.status(options, config.home, BACKEND_NAME, time.monotonic() + READ_DEADLINE) \
            if warm.enabled(options) else None
        print_json({"enabled": warm.enabled(options), "running": bool(found and "pid" in found),
                    "pid": (found or {}).get("pid"), "searches": (found or {}).get("searches"), "status": line})
    else:
        print(line)
    return 0


def run_search(args: argparse.Namespace, config: PaoConfig) -> int:
    store = open_store(config)
    note = LongtermBackend("longterm", store.options, store.home).follow_file(time.monotonic() + READ_DEADLINE)
    if note:
        print(f"pao: {strip_controls(note)}", file=sys.stderr)
    items = store.search(args.topic, args.limit, time.monotonic() + READ_DEADLINE, args.mode)
    items = attach(store.options, store.home, items, time.monotonic() + READ_DEADLINE)  # who wrote each
    if not args.raw_unredacted:
        items = [clean_item(item) for item in items]
    elif not args.json:  # raw, yet never an escape sequence to the terminal
        items = [attrs.evolve(item, title=strip_controls(item.title), text=strip_controls(item.text)) for item in items]
    if args.json:
        print_json({"topic": args.topic, "items": [item_json(item) for item in items]})
        return 0
    for rank, item in enumerate(items, start=1):  # memory (entity names too) only on quoted lines
        who = item.meta.get("provenance") or {}
        written_by = Provenance(str(who.get("agent")), who.get("session_id"), parse_timestamp(who.get("recorded_at")))
        print(f"{rank:2}. [{item.score:.3f}] " + (f"an agent's fact ({clean_inline(written_by.describe())})"
                                                   if by_agent(item) else "the user's"))
        print(f"    > {' '.join(item.title.split())}")
        print("\n".join(f"    > {line}" for line in item.text.split("\n") if line.strip()))
    return 0


def run_review(args: argparse.Namespace, config: PaoConfig) -> int:
    from pao_postgres.store.review import agent_facts, settle  # SQLAlchemy: only for this command

    store = open_store(config)
    if args.keep or args.forget:
        settle(store, args.keep, args.forget)
        if args.forget:
            writes.refresh_vectors(store)  # a forgotten fact's vector goes with it
        if args.json:
            print_json({"kept": sorted(set(args.keep)), "forgotten": sorted(set(args.forget))})
        else:
            print(f"kept {len(set(args.keep))}, forgot {len(set(args.forget))} agents' facts")
        return 0
    facts = agent_facts(store, time.monotonic() + READ_DEADLINE)
    if args.json:
        print_json({"store": store.describe(), "facts": [fact.as_json() for fact in facts]})
        return 0
    if not facts:
        print(f"no facts written by agents await review in {store.describe()}")
    for fact in facts:
        session = f", session {fact.session_id}" if fact.session_id else ""
        when = f", {fact.recorded_at:%Y-%m-%d %H:%M} UTC" if fact.recorded_at else ""
        print(f"{fact.id:>6}  agent {fact.agent}{session}{when}")
        print(f"        > {fact.entity}")
        print("\n".join(f"        > {line}" for line in fact.text.split("\n") if line.strip()))
    return 0


def run_export(args: argparse.Namespace, config: PaoConfig) -> int:
    from pao_core.files import atomic_write  # not needed until this runs: start-up stays light

    target: Path = args.file.expanduser()
    if str(args.file) == "-":  # not stdout: the store is written as stored (unredacted), to a 0600 file only
        raise ValidationError("memory export: name a file to write ('-' is not standard output here: the export "
                              "is not redacted, so it goes only into a file of yours, 0600)")
    if target.is_dir():
        raise ValidationError(f"memory export: {target} is a folder; name a file")
    if target.exists() and not stat.S_ISREG(target.stat().st_mode):  # /dev/null, a FIFO: never replaced
        raise ValidationError(f"memory export: {target} is not a regular file (a FIFO, device or socket); "
                              "pao writes exports to regular files only")
    if target.exists() and not args.force:
        raise ValidationError(f"memory export: {target} exists; add --force to replace it")
    if not target.parent.is_dir():
        raise ValidationError(f"memory export: {target.parent}: no such folder")
    store = open_store(config)
    graph = store.graph(time.monotonic() + READ_DEADLINE)
    atomic_write(target, memory_lines(graph), mode=0o600)  # memory text: the owner's only
    counts = {"entities": len(graph.entities), "observations": graph.observation_count, "relations": len(graph.relations)}
    if args.json:
        print_json({"file": str(target), "store": store.describe(), **counts})
    else:
        print(f"exported {counts['entities']} entities, {counts['observations']} observations and "
              f"{counts['relations']} relations from {store.describe()} to {target}")
    return 0


def run_forget(args: argparse.Namespace, config: PaoConfig) -> int:
    def shown(text: str) -> str:  # memory text leaves pao redacted, without control characters
        return repr(clean(text))

    store = open_store(config)
    removed = store.forget(args.entity, args.observation)
    if not (removed.entities or removed.observations):
        what = f"no observation {shown(args.observation)} of" if args.observation is not None else "no entity named"
        raise PaoError(f"memory forget: {what} {shown(args.entity)} in {store.describe()}; nothing removed")
    writes.refresh_vectors(store)  # a forgotten observation's vector goes with it
    if args.json:
        print_json({"entity": clean(args.entity), "removed": {"entities": removed.entities,
                    "observations": removed.observations, "relations": removed.relations}})
    elif args.observation is not None:
        print(f"forgot {removed.observations} observation of {shown(args.entity)}")
    else:
        print(f"forgot {shown(args.entity)}: {removed.observations} observations, {removed.relations} relations")
    return 0


def item_json(item) -> dict:  # type: ignore[no-untyped-def]
    return {
        "id": item.id,
        "title": item.title,
        "text": item.text,
        "kind": item.kind,
        "timestamp": item.timestamp.isoformat() if item.timestamp else None,
        "score": item.score,
        "meta": dict(item.meta),
    }
