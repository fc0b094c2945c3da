"""``pao memory import | embed | sync``: the writes of many observations, their vectors after them."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from pao_core.errors import PaoError
from pao_core.output import print_json
from pao_postgres import BACKEND_NAME
from pao_postgres.mcpfile import read_memory_file
from pao_postgres.options import LongtermOptions, memory_file
from pao_postgres.store.filesync import sync

if TYPE_CHECKING:
    from pao_core.config import PaoConfig
    from pao_agents.spec.progress import Progress
    from pao_postgres.store.longterm import LongtermStore
    from pao_postgres.store.vectors import RefreshReport


def add_write_commands(actions: argparse._SubParsersAction) -> None:
    """``pao memory import | embed | sync``."""
    load = actions.add_parser("import", help="import an MCP memory-server JSONL file (idempotent)")
    load.add_argument("file", metavar="FILE", type=Path, help="the memory.jsonl file")
    for parser, run in (
        (load, run_import),
        (actions.add_parser("embed", help="embed the observations lacking a vector now (the background job)"), run_embed),
        (actions.add_parser("sync", help="bring the store up to date with the MCP memory file now"), run_sync),
    ):
        parser.add_argument("--json", action="store_true", help="print JSON")
        parser.set_defaults(func=run)


def open_store(config: PaoConfig) -> LongtermStore:
    from pao_postgres.store.longterm import LongtermStore  # SQLAlchemy: loaded only by the commands that use the store

    return LongtermStore(config.options("backends", BACKEND_NAME, LongtermOptions), config.home)


def refresh_vectors(store: LongtermStore, progress: Progress | None = None) -> RefreshReport:
    """After a write: embed what is new or changed (shown on ``progress``), drop what is gone."""
    from pao_postgres.store.vectors import refresh_vectors as refresh  # not needed until this runs: start-up stays light

    def embedded(done: int, total: int) -> None:
        if progress is not None:
            progress.count(done, total, "observations embedded")

    return refresh(store, embedded)


def run_import(args: argparse.Namespace, config: PaoConfig) -> int:
    from pao_agents.spec.progress import Progress, number  # the progress display: only for this command

    with Progress(f"importing {args.file}") as progress:
        memory = read_memory_file(args.file)
        store = open_store(config)
        progress.update(f"writing {number(memory.observation_count)} observations")
        counts = store.import_memory(memory)
        vectors = vectors_after_write(store, progress)
    report = {
        "file": str(args.file),
        "store": store.describe(),
        "added": {"entities": counts.entities, "observations": counts.observations, "relations": counts.relations},
        "vectors": vectors,
        "in_file": {
            "entities": len(memory.entities),
            "observations": memory.observation_count,
            "relations": len(memory.relations),
        },
    }
    if args.json:
        print_json(report)
    else:
        print(
            f"imported {args.file} into {report['store']}: {number(counts.entities)} entities, "
            f"{number(counts.observations)} observations, {number(counts.relations)} relations added"
        )
        if "background" in vectors:
            print(f"vectors for semantic search: embedding in the background ({vectors['background']['log']}); "
                  "lexical search finds the new observations now")
    return 0


def vectors_after_write(store: LongtermStore, progress: Progress | None = None) -> dict:
    """A large write's vectors: left to the background job when it may run (the write returns at
    once, searchable lexically), else embedded here."""
    from pao_embeddings import later  # not needed until this runs: start-up stays light

    if store.options.semantic and later.enabled(store.options.background_embedding) and later.embeddings_available():
        started = later.embed_later(BACKEND_NAME, ["memory", "embed"], store.home)
        # not started: a job of this store runs, and runs its command again for this write
        log = str(later.folder(store.home) / f"{BACKEND_NAME}.log")
        return {"embedded": 0, "removed": 0, "retrieval": "lexical now, vectors in the background",
                "background": {"job_started": started, "log": log}}
    vectors = refresh_vectors(store, progress)
    return {"embedded": vectors.embedded, "removed": vectors.removed, "retrieval": vectors.mode}


def run_embed(args: argparse.Namespace, config: PaoConfig) -> int:
    from pao_agents.spec.progress import Progress, duration, number  # the progress display: only for this command

    store = open_store(config)
    with Progress("embedding for semantic search") as progress:
        vectors = refresh_vectors(store, progress)
    if args.json:
        print_json({"store": store.describe(), "embedded": vectors.embedded, "removed": vectors.removed,
                    "elapsed_s": vectors.elapsed_s, "retrieval": vectors.mode})
    else:
        print(f"embedded {number(vectors.embedded)} observations in {duration(vectors.elapsed_s)} ({vectors.mode})")
    return 0


def run_sync(args: argparse.Namespace, config: PaoConfig) -> int:
    store = open_store(config)
    path = memory_file(store.options)
    if path is None:
        raise PaoError("memory sync: no memory file: set [backends.longterm] memory_file, PAO_MEMORY_FILE or MEMORY_FILE_PATH")
    from pao_agents.spec.progress import Progress, number  # the progress display: only for this command

    with Progress(f"syncing {path}") as progress:
        report = sync(store.options, store.home, path)
        if report.note:
            raise PaoError(f"memory sync: {report.note}")
        vectors = refresh_vectors(store, progress)  # also what a search synced (pao_embeddings.later runs this for it)
    if args.json:
        print_json({"file": report.file, "store": store.describe(), "synced": report.synced,
                    "added": dict(report.added), "removed": dict(report.removed), "embedded": vectors.embedded})
        return 0
    if not report.synced:
        print(f"{store.describe()} is up to date with {report.file}")
    else:
        a, r = report.added, report.removed
        print(f"synced {report.file} into {store.describe()}: added {a.get('entities', 0)} entities, "
              f"{a.get('observations', 0)} observations, {a.get('relations', 0)} relations; removed "
              f"{r.get('entities', 0)} entities, {r.get('observations', 0)} observations, {r.get('relations', 0)} relations")
    if vectors.embedded:
        plural = "" if vectors.embedded == 1 else "s"
        print(f"embedded {number(vectors.embedded)} observation{plural} in {vectors.elapsed_s:.2f} s (semantic search)")
    return 0


