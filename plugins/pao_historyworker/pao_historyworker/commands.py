"""``pao history index | stats | serve``."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import attrs

from pao_core.errors import PaoError
from pao_core.output import print_json
from pao_historyworker.options import TOKEN_ENV, TOKEN_FILE, HistoryOptions, ensure_token

if TYPE_CHECKING:
    from pao_core.config import PaoConfig


def add_history_commands(subparsers: argparse._SubParsersAction) -> None:
    history = subparsers.add_parser("history", help="conversation-history store: index, stats, serve")
    commands = history.add_subparsers(dest="history_command", metavar="SUBCOMMAND", required=True)

    index = commands.add_parser("index", help="index Claude Code transcripts (only new or grown files)")
    index.add_argument("folder", nargs="?", metavar="DIR", help="transcripts folder (default ~/.claude/projects)")
    index.add_argument("--embed", action="store_true",
                       help="embed the new exchanges in this process (default: a background job does, "
                            "when background_embedding is on)")
    index.add_argument("--json", action="store_true", help="print JSON")
    index.set_defaults(func=run_index)

    stats = commands.add_parser("stats", help="show what the local index holds")
    stats.add_argument("--json", action="store_true", help="print JSON")
    stats.set_defaults(func=run_stats)

    # no abbreviations: "--token SECRET" must not pass as --token-file (a token on argv shows in `ps`)
    serve = commands.add_parser("serve", help="serve the local index over HTTP (JSON-RPC and MCP)", allow_abbrev=False)
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=0, help="port (default: a free one)")
    serve.add_argument("--token-file", type=Path, metavar="PATH",
                       help=f"the bearer token to require (default ${TOKEN_ENV}, else <PAO_HOME>/{TOKEN_FILE}, made 0600)")
    serve.set_defaults(func=run_serve)


def _options(config: PaoConfig) -> HistoryOptions:
    return config.options("backends", "history", HistoryOptions)


def load_corpus(corpus: Path, config: PaoConfig) -> str | None:
    """``pao eval``: the corpus's ``transcripts`` folder indexed, as ``pao history index`` does."""
    from pao_historyworker.index import connect, index_transcripts  # the index loads only when used

    root = corpus / "transcripts"
    if not root.is_dir():
        return None
    options = _options(config)
    conn = connect(options.index_path(config.home), create=True)
    try:
        report = index_transcripts(conn, root, embed=options.semantic)
    finally:
        conn.close()
    return f"{root.name}: {report.exchanges_added} exchanges from {report.files_read} files"


def run_index(args: argparse.Namespace, config: PaoConfig) -> int:
    # loads sqlite3 on use: start-up stays light
    from pao_historyworker.index import HistoryIndexError, connect, index_transcripts

    options = _options(config)
    root = Path(args.folder).expanduser() if args.folder else options.transcripts_path()
    if not root.exists() and args.folder:
        raise PaoError(f"{root}: no such transcripts folder")
    path = options.index_path(config.home)
    try:
        conn = connect(path, create=True)
    except (HistoryIndexError, OSError) as exc:
        raise PaoError(f"cannot open history index {path}: {exc}") from None
    if not root.exists():
        # A new user with no transcripts yet gets an empty index, so `pao brief` works.
        conn.close()
        print(f"no transcripts in {root} yet: the history index {path} is empty")
        return 0
    from pao_agents.spec.progress import Progress  # not needed until this runs: start-up stays light

    later = _embed_later(options, config.home, root) if options.semantic and not args.embed else None
    try:
        with Progress(f"indexing {root}") as progress:
            report = index_transcripts(
                conn, root, embed=options.semantic and later is None, guard=_indexing_lock(path),
                on_file=lambda read, total: progress.count(read, total, "files read"),
                progress=lambda done, total: progress.count(done, total, "exchanges embedded"),
            )
    except HistoryIndexError as exc:
        raise PaoError(str(exc)) from None
    finally:
        conn.close()
    if args.json:
        print_json({"index": str(path), "folder": str(root), **attrs.asdict(report)})
    elif report.files_seen and not report.files_read:
        print(f"{path} is up to date: nothing new in {report.files_seen} transcript files")
    else:
        print(
            f"indexed {report.exchanges_added} exchanges from {report.files_read} of {report.files_seen} files"
            f" in {report.elapsed_s:.2f} s ({report.malformed_lines} malformed lines skipped) into {path}"
        )
    if report.exchanges_embedded and not args.json:
        print(f"embedded {report.exchanges_embedded} exchanges in {report.embed_s:.2f} s (semantic search)")
    if later is not None and _lacking_vectors(path):
        later()
        if not args.json:
            print("vectors for semantic search: embedding in the background; lexical search finds them now")
    return 0


def _lacking_vectors(path: Path) -> bool:
    from pao_historyworker.index import connect, vector_stats  # on use: start-up stays light

    conn = connect(path)
    try:
        exchanges = conn.execute("SELECT count(*) FROM exchanges").fetchone()[0]
        return bool(exchanges) and vector_stats(conn, exchanges)["vectors"] < exchanges
    finally:
        conn.close()


def _embed_later(options: HistoryOptions, home: Path, root: Path):  # type: ignore[no-untyped-def]
    """What starts the background job that embeds what this run indexes (None: embed here)."""
    from pao_embeddings import later  # not needed until this runs: start-up stays light

    if not later.enabled(options.background_embedding) or not later.embeddings_available():
        return None
    return lambda: later.embed_later("history", ["history", "index", str(root.absolute()), "--embed"], home)


@contextlib.contextmanager
def _indexing_lock(path: Path):  # type: ignore[no-untyped-def]
    """The lock that keeps one process at a time reading transcripts into ``path``: wait
    for another (a search's bounded refresh, another ``pao history index``), saying so."""
    from pao_core.files import LockTimeout, take_lock  # on use: start-up stays light
    from pao_historyworker.fresh import lock_for  # on use: start-up stays light

    lock = lock_for(path)
    try:
        held = take_lock(lock, timeout=0)
    except LockTimeout:
        print(f"pao: waiting for another pao process indexing into {path}", file=sys.stderr, flush=True)
        try:
            held = take_lock(lock, timeout=LOCK_WAIT_S)
        except LockTimeout:
            raise PaoError(f"another pao process held {lock} for {LOCK_WAIT_S:.0f} s; try again later") from None
    try:
        yield
    finally:
        os.close(held)


LOCK_WAIT_S = 600.0


def run_stats(args: argparse.Namespace, config: PaoConfig) -> int:
    from pao_historyworker.index import HistoryIndexError, connect, stats  # loads sqlite3 on use: start-up stays light

    path = _options(config).index_path(config.home)
    try:
        conn = connect(path)
    except HistoryIndexError as exc:
        raise PaoError(str(exc)) from None
    try:
        counts = stats(conn, path, _options(config).semantic)
    finally:
        conn.close()
    if args.json:
        print_json(counts)
    else:
        for key, value in counts.items():
            print(f"{key}: {value}")
    return 0


def run_serve(args: argparse.Namespace, config: PaoConfig) -> int:
    from pao_historyworker.index import HistoryIndexError, connect  # loads sqlite3 on use: start-up stays light
    from pao_historyworker.server import make_server  # not needed until this runs: start-up stays light

    options = _options(config)
    path = options.index_path(config.home)
    try:
        connect(path).close()
    except HistoryIndexError as exc:
        raise PaoError(str(exc)) from None

    try:
        token = os.environ.get(TOKEN_ENV) or ensure_token(args.token_file or options.token_path(config.home))
    except (OSError, ValueError) as exc:
        raise PaoError(f"history token: {exc}") from None
    try:
        server = make_server(path, args.host, args.port, token=token, semantic=options.semantic)
    except OSError as exc:
        raise PaoError(f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}") from None
    print(f"PAO_HISTORY_URL={server.url}", flush=True)
    print(f"pao: serving {path} on {server.url} (Ctrl-C to stop)", file=sys.stderr, flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0
