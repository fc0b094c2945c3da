"""The PostgreSQL store's ranked search on both eval corpora, as a user's briefing gets it.

Every query of ``tests/data/eval`` and ``tests/data/eval2`` goes through
``LongtermBackend.search`` (semantic + lexical, the default) on a real server, and the
ranked ids must equal ``data/postgres_ranked.json``: the answers of the SQLAlchemy
search path the psycopg one replaced. A change of ranking that is meant (a new
method, a new recipe) regenerates the file and shows the difference in review:

    PAO_UPDATE_SNAPSHOT=1 .venv/bin/python -m pytest plugins/pao_postgres/tests/test_longterm_postgres_ranked.py
"""

from __future__ import annotations

import json
import os
import time
import uuid
from pathlib import Path

import pytest

pytestmark = pytest.mark.embeddings

DATA = Path(__file__).resolve().parents[3] / "tests" / "data"
SNAPSHOT = Path(__file__).resolve().parent / "data" / "postgres_ranked.json"
CORPORA = ("eval", "eval2")


def ranked_ids(url: str, schema: str, home: Path, corpus: str) -> dict[str, list[str]]:
    """Load ``corpus`` into ``schema`` (vectors included) and search every query of it."""
    from pao_postgres.backend import LongtermBackend
    from pao_postgres.mcpfile import read_memory_file
    from pao_postgres.options import LongtermOptions
    from pao_postgres.store.longterm import LongtermStore
    from pao_postgres.store.vectors import refresh_vectors

    options = LongtermOptions(url=url, schema=schema)
    store = LongtermStore(options, home)
    store.import_memory(read_memory_file(DATA / corpus / "memory.jsonl"))
    refresh_vectors(store)
    backend = LongtermBackend("longterm", options, home)
    queries = [json.loads(line) for line in (DATA / corpus / "queries.jsonl").read_text().splitlines() if line.strip()]
    return {q["qid"]: [item.id for item in backend.search(q["topic"], 10, time.monotonic() + 60)] for q in queries}


def test_postgres_ranked_results_equal_the_snapshot(postgres_server_url: str, pao_env: Path) -> None:
    import psycopg

    found = {}
    for corpus in CORPORA:
        schema = "t_" + uuid.uuid4().hex[:12]
        try:
            found[corpus] = ranked_ids(postgres_server_url, schema, pao_env / "pao", corpus)
        finally:
            with psycopg.connect(postgres_server_url, autocommit=True, connect_timeout=10) as connection:
                connection.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
    if os.environ.get("PAO_UPDATE_SNAPSHOT") == "1":
        SNAPSHOT.parent.mkdir(exist_ok=True)
        SNAPSHOT.write_text(json.dumps(found, indent=1, sort_keys=True) + "\n")
    expected = json.loads(SNAPSHOT.read_text())
    for corpus in CORPORA:
        assert sum(1 for ids in found[corpus].values() if ids) >= len(found[corpus]) // 2  # a search that answers
        for qid, ids in expected[corpus].items():
            assert found[corpus][qid] == ids, (corpus, qid)
