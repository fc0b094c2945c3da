"""The live bridge to the MCP memory server's file, export and forget, on both dialects.

A real file rewritten the way the MCP memory server rewrites it (truncate, then
write), a real PostgreSQL server or the embedded SQLite store, the real ``pao`` CLI.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import attrs
import pytest

from pao_postgres.options import memory_file
from pao_postgres.mcpfile import parse_memory
from pao_postgres.options import LongtermOptions

from longterm_helpers import EVAL_MEMORY

PAO = str(Path(sys.executable).with_name("pao"))


def entity(name: str, kind: str, *observations: str) -> dict:
    return {"type": "entity", "name": name, "entityType": kind, "observations": list(observations)}


def relation(source: str, target: str, kind: str) -> dict:
    return {"type": "relation", "from": source, "to": target, "relationType": kind}


def jsonl(*records: dict) -> str:
    """As the MCP memory server writes it: one record a line, no final newline."""
    return "\n".join(json.dumps(record) for record in records)


def graph(text: str) -> tuple[dict, set]:
    memory = parse_memory(text.encode(), "graph")
    return ({e.name: (e.entity_type, set(e.observations)) for e in memory.entities},
            {(r.source, r.target, r.relation_type) for r in memory.relations})


def store_graph(longterm, tmp_path: Path) -> tuple[dict, set]:
    out = tmp_path / f"export-{time.monotonic_ns()}.jsonl"
    code, _, err = longterm.pao("memory", "export", str(out))
    assert code == 0, err
    return graph(out.read_text())


def write(path: Path, text: str) -> None:
    """A new version, stamped in the past so the sync need not wait for it to settle."""
    path.write_text(text)
    stamp = time.time() - 1
    os.utime(path, (stamp, stamp))


V1 = jsonl(
    entity("auth-service", "service", "uses redis for sessions", "written in Go"),
    entity("Sam", "person", "prefers small PRs"),
    entity("billing", "service", "charges on the first of the month"),
    relation("Sam", "auth-service", "maintains"),
    relation("Sam", "billing", "maintains"),
)
V2 = jsonl(
    entity("auth-service", "component", "uses valkey for sessions", "written in Go"),
    entity("Sam", "person", "prefers small PRs", "reviews on Fridays"),
    entity("notes-mcp", "tool", "indexes markdown notes"),
    relation("Sam", "auth-service", "maintains"),
    relation("Sam", "notes-mcp", "wrote"),
)


@pytest.fixture
def followed(longterm, tmp_path: Path) -> Path:
    path = tmp_path / "memory.jsonl"
    write(path, V1)
    longterm.configure(f'memory_file = "{path}"\n')
    return path


def test_edits_additions_and_deletions_reach_the_store_before_a_search(longterm, followed, tmp_path):
    # the hit first; the entity's other observation follows it (entity siblings), then those of
    # the entity related to it (Sam maintains auth-service; docs/longterm.md)
    found = longterm.pao_json("memory", "search", "redis sessions")["items"]
    assert [item["text"] for item in found] == ["uses redis for sessions", "written in Go", "prefers small PRs"]
    assert store_graph(longterm, tmp_path) == graph(V1)
    write(followed, V2)
    found = longterm.pao_json("memory", "search", "valkey redis sessions")["items"]
    assert [item["text"] for item in found] == ["uses valkey for sessions", "written in Go",  # the edit replaced it
                                                "prefers small PRs", "reviews on Fridays"]  # no duplicate
    assert store_graph(longterm, tmp_path) == graph(V2)  # types, entities, relations: all followed
    write(followed, V2 + "\n")  # same graph, new signature: nothing changes
    assert store_graph(longterm, tmp_path) == graph(V2)


def test_a_briefing_follows_the_file_and_pao_s_own_writes_survive(longterm, followed, tmp_path):
    assert longterm.pao_json("memory", "search", "billing charges")["items"][0]["title"] == "billing"
    code, _, err = longterm.pao("memory", "add", "billing", "pao wrote this: invoices are retried nightly")
    assert code == 0, err
    briefing = longterm.pao_json("brief", "billing charges first of the month")
    assert briefing["backends"]["longterm"]["note"] is None
    assert any(item["text"] == "charges on the first of the month" for item in briefing["items"])
    write(followed, V2)  # billing left the file
    briefing = longterm.pao_json("brief", "billing charges first of the month")
    assert not any(item["text"] == "charges on the first of the month" for item in briefing["items"])
    entities, relations = store_graph(longterm, tmp_path)
    assert entities["billing"] == ("service", {"pao wrote this: invoices are retried nightly"})
    assert ("Sam", "billing", "maintains") not in relations


def test_what_an_agent_remembered_is_not_the_file_s_to_delete(longterm, followed, tmp_path):
    import datetime as dt

    from pao_core.models import Provenance
    from pao_postgres.backend import LongtermBackend
    from pao_postgres.store.longterm import LongtermStore

    store = LongtermStore(LongtermOptions(url=longterm.url or "", schema=longterm.schema or ""), longterm.home)
    store.init()
    agent = Provenance("api", "1a2b3c4d", dt.datetime(2026, 11, 30, tzinfo=dt.timezone.utc))
    store.remember("auth-service", "sessions expire after 30 minutes", agent)
    write(followed, V1.replace('"written in Go"', '"written in Go", "sessions expire after 30 minutes"'))
    longterm.pao_json("memory", "search", "sessions")
    write(followed, V2)
    backend = LongtermBackend("longterm", store.options.__class__(**{**attrs.asdict(store.options, recurse=False),
                                                                     "memory_file": followed}), longterm.home)
    found = backend.search("auth-service sessions expire 30 minutes", 10, time.monotonic() + 10)
    kept = [item for item in found if item.text == "sessions expire after 30 minutes"]
    assert len(kept) == 1 and kept[0].meta["provenance"]["agent"] == "api"
    entities, _ = store_graph(longterm, tmp_path)
    assert entities["auth-service"][1] == {"uses valkey for sessions", "written in Go", "sessions expire after 30 minutes"}


@pytest.mark.parametrize("torn", ["half-written last line", "empty, just truncated"])
def test_a_file_caught_half_written_keeps_the_previous_state(longterm, followed, tmp_path, torn):
    longterm.pao_json("memory", "search", "redis sessions")
    followed.write_text(V2[: V2.rindex("{") + 20] if torn.startswith("half") else "")  # mtime: now
    briefing = longterm.pao_json("brief", "auth-service sessions redis")
    assert "memory file not synced" in briefing["backends"]["longterm"]["note"]
    assert store_graph(longterm, tmp_path) == graph(V1)
    write(followed, V2)
    assert longterm.pao_json("brief", "auth-service sessions")["backends"]["longterm"]["note"] is None
    assert store_graph(longterm, tmp_path) == graph(V2)


def test_a_file_rewritten_while_pao_reads_it_is_never_half_read(longterm, followed, tmp_path):
    """A writer rewrites the file as the MCP server does (truncate, write), in two pieces
    split at a line boundary, while searches sync: the store is always one whole version."""
    versions = [V1, V2]
    stop = threading.Event()

    def rewrite() -> None:
        turn = 0
        while not stop.is_set():
            text = versions[turn % 2]
            cut = text.index("\n", len(text) // 2) + 1
            with followed.open("w") as handle:
                handle.write(text[:cut])
                handle.flush()
                time.sleep(0.02)
                handle.write(text[cut:])
            time.sleep(0.15)
            turn += 1

    code, _, err = longterm.pao("memory", "sync")  # the store starts at V1: an empty one is no version
    assert code == 0, err
    assert store_graph(longterm, tmp_path) == graph(V1)
    writer = threading.Thread(target=rewrite, daemon=True)
    writer.start()
    seen = []
    try:
        # at least 6 s of searches, and on until one has followed the file to V2: a whole V2 is
        # settled on disk for ~0.1 s of each 0.34 s cycle, and under load a search takes ~1 s
        started = time.monotonic()
        while time.monotonic() < started + 6 or (graph(V2) not in seen and time.monotonic() < started + 60):
            longterm.pao("memory", "search", "sessions")
            seen.append(store_graph(longterm, tmp_path))
    finally:
        stop.set()
        writer.join()
    wholes = [graph(V1), graph(V2)]
    assert all(state in wholes for state in seen), [s for s in seen if s not in wholes][:1]
    assert graph(V2) in seen  # the syncs did follow the file, not just refuse


def test_concurrent_syncs_add_nothing_twice(longterm, followed, tmp_path):
    write(followed, EVAL_MEMORY.read_text())
    runs = [subprocess.Popen([PAO, "memory", "sync", "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for _ in range(4)]
    reports = []
    for run in runs:
        out, err = run.communicate(timeout=600)  # a loaded 2-core machine: minutes
        assert run.returncode == 0, err
        reports.append(json.loads(out))
    assert sum(report["synced"] for report in reports) == 1  # one applied it, the others found it done
    stats = longterm.pao_json("memory", "stats")
    expected = parse_memory(EVAL_MEMORY.read_bytes(), "eval")
    assert stats["observations"] == expected.observation_count
    assert store_graph(longterm, tmp_path) == graph(EVAL_MEMORY.read_text())


def test_export_then_import_gives_the_same_graph(longterm, tmp_path, monkeypatch):
    code, _, err = longterm.pao("memory", "import", str(EVAL_MEMORY))
    assert code == 0, err
    exported = tmp_path / "out" / "memory.jsonl"
    exported.parent.mkdir()
    result = longterm.pao_json("memory", "export", str(exported))
    assert (exported.stat().st_mode & 0o777) == 0o600
    assert graph(exported.read_text()) == graph(EVAL_MEMORY.read_text())
    assert result["observations"] == parse_memory(EVAL_MEMORY.read_bytes(), "eval").observation_count
    code, _, err = longterm.pao("memory", "export", str(exported))
    assert code == 2 and err.count("\n") == 1 and "exists; add --force" in err
    monkeypatch.chdir(tmp_path)
    code, out, err = longterm.pao("memory", "export", "-")  # never a file named '-', never the terminal
    assert (code, out, err.count("\n")) == (2, "", 1) and "name a file" in err and not (tmp_path / "-").exists()
    # into an empty store, and out again: the same entities, observations (in order) and relations
    longterm.home = tmp_path / "second-home"
    os.environ["PAO_HOME"] = str(longterm.home)
    if longterm.schema:
        longterm.schema += "_2"
        longterm.configure()
    try:
        code, _, err = longterm.pao("memory", "import", str(exported))
        assert code == 0, err
        again = tmp_path / "again.jsonl"
        longterm.pao_json("memory", "export", str(again))
    finally:
        if longterm.schema:
            import psycopg

            with psycopg.connect(longterm.url, autocommit=True) as connection:
                connection.execute(f"DROP SCHEMA IF EXISTS {longterm.schema} CASCADE")
            longterm.schema = longterm.schema[:-2]
    assert again.read_text() == exported.read_text()


def test_forget_an_entity_or_one_observation(longterm, followed, tmp_path):
    longterm.pao_json("memory", "search", "sessions")
    removed = longterm.pao_json("memory", "forget", "auth-service", "--observation", "written in Go")
    assert removed["removed"] == {"entities": 0, "observations": 1, "relations": 0}
    removed = longterm.pao_json("memory", "forget", "Sam")
    assert removed["removed"] == {"entities": 1, "observations": 1, "relations": 2}
    entities, relations = store_graph(longterm, tmp_path)
    assert entities == {"auth-service": ("service", {"uses redis for sessions"}), "billing": ("service", {"charges on the first of the month"})}
    assert relations == set()
    assert store_graph(longterm, tmp_path) == (entities, relations)  # the unchanged file does not bring it back
    code, out, err = longterm.pao("memory", "forget", "Nobody")
    assert code == 1 and out == "" and err == "pao: memory forget: no entity named 'Nobody' in " + err.split(" in ", 1)[1]
    assert err.count("\n") == 1
    secret = "token=ghp_" + "a1B2c3D4e5" * 4
    code, _, err = longterm.pao("memory", "forget", "billing", "--observation", secret)
    assert code == 1 and "ghp_" not in err and "[redacted]" in err


def test_which_file_is_followed():
    options = LongtermOptions(memory_file=Path("/config/memory.jsonl"))
    assert memory_file(options, {"PAO_MEMORY_FILE": "/env/m.jsonl"}) == Path("/env/m.jsonl")
    assert memory_file(options, {"MEMORY_FILE_PATH": "/server/m.jsonl"}) == Path("/config/memory.jsonl")
    assert memory_file(LongtermOptions(), {"MEMORY_FILE_PATH": "/server/m.jsonl"}) == Path("/server/m.jsonl")
    assert memory_file(LongtermOptions(), {"MEMORY_FILE_PATH": "memory.jsonl"}) is None  # relative to the server's install
    assert memory_file(LongtermOptions(), {}) is None
