"""`pao memory init|import|add|stats|search` and `pao brief` on both dialects, through the CLI."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
from pathlib import Path

from longterm_helpers import EVAL_MEMORY, Longterm


def first_lines(path: Path) -> dict[str, dict]:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return {row["name"]: row for row in rows if row["type"] == "entity"}


def test_plugin_is_listed(longterm: Longterm) -> None:
    report = longterm.pao_json("plugins")
    row = next(r for r in report["plugins"] if r["name"] == "postgres")
    assert row["distribution"] == "pao-postgres"
    assert {"pao_memory_backends", "pao_add_commands"} <= set(row["hooks"])
    assert report["failures"] == []


def test_import_is_complete_ordered_and_idempotent(longterm: Longterm) -> None:
    first = longterm.pao_json("memory", "import", str(EVAL_MEMORY))
    assert first["added"] == {"entities": 230, "observations": 912, "relations": 179}
    again = longterm.pao_json("memory", "import", str(EVAL_MEMORY))
    assert again["added"] == {"entities": 0, "observations": 0, "relations": 0}
    stats = longterm.pao_json("memory", "stats")
    assert (stats["entities"], stats["observations"], stats["relations"]) == (230, 912, 179)
    assert stats["dialect"] == ("sqlite" if longterm.dialect == "sqlite" else "postgresql")

    entity = first_lines(EVAL_MEMORY)["TestFlight"]
    found = longterm.pao_json("memory", "search", "TestFlight external testers Beta App Review", "--limit", "20")["items"]
    by_id = {item["id"]: item for item in found}
    for position, text in enumerate(entity["observations"]):
        if f"obs:TestFlight#{position}" in by_id:
            assert by_id[f"obs:TestFlight#{position}"]["text"] == text
    assert by_id["obs:TestFlight#0"]["text"] == entity["observations"][0]


def test_brief_returns_ranked_observations_with_entity_position_and_date(longterm: Longterm) -> None:
    longterm.pao("memory", "import", str(EVAL_MEMORY))
    briefing = longterm.pao_json("brief", "Gus smells like acetone")
    assert briefing["backends"]["longterm"]["status"] == "ok"
    items = [item for item in briefing["items"] if item["backend"] == "longterm"]
    assert items and items[0]["id"] == "obs:Gus#7"
    top = items[0]
    assert top["title"] == "Gus" and "acetone" in top["text"]
    assert top["meta"] == {"entity": "Gus", "entity_type": "SourdoughStarter", "position": 7}
    stamp = dt.datetime.fromisoformat(top["timestamp"])
    assert stamp.tzinfo is not None and abs(dt.datetime.now(dt.timezone.utc) - stamp) < dt.timedelta(hours=1)
    # Every rank is there; fusion may move a newer dated fact above an older one (supersession).
    assert sorted(item["rank"] for item in items) == list(range(1, len(items) + 1))
    # Gus's observations first (the hit, then its entity's others), then only those of the entities
    # related to Gus (the formulas it leavens, the proofing box, Lena who gave it)
    gus = [n for n, item in enumerate(items) if item["id"].startswith("obs:Gus#")]
    assert gus == list(range(len(gus)))
    rows = [json.loads(line) for line in EVAL_MEMORY.read_text().splitlines() if line.strip()]
    related = {row["from"] for row in rows if row["type"] == "relation" and row["to"] == "Gus"}
    related |= {row["to"] for row in rows if row["type"] == "relation" and row["from"] == "Gus"}
    assert {item["title"] for item in items[len(gus):]} <= related


def test_unrelated_topic_returns_nothing(longterm: Longterm) -> None:
    longterm.pao("memory", "import", str(EVAL_MEMORY))
    for topic in ("configure Apache Kafka topics and consumer groups on AWS MSK",
                  "train a YOLOv8 object detector on drone footage"):
        briefing = longterm.pao_json("brief", topic)
        assert briefing["backends"]["longterm"] == {"status": "ok", "elapsed_ms": briefing["backends"]["longterm"]["elapsed_ms"], "count": 0, "error": None, "note": None}


def test_modes_are_selectable(longterm: Longterm) -> None:
    longterm.pao("memory", "import", str(EVAL_MEMORY))
    topic = "fix pgloader cast rules and verify row counts for the MySQL to Postgres copy"
    original = longterm.pao_json("memory", "search", topic, "--mode", "original")["items"]
    ranked = longterm.pao_json("memory", "search", topic, "--mode", "ranked")["items"]
    assert original and ranked
    assert any("pgloader" in item["text"] for item in ranked[:3])
    longterm.configure('mode = "original"\n')
    configured = longterm.pao_json("memory", "search", topic)["items"]
    assert [item["id"] for item in configured] == [item["id"] for item in original]
    code, _, err = longterm.pao("memory", "search", topic, "--mode", "fuzzy")
    assert code == 2 and "invalid choice" in err


def test_add_appends_to_an_entity(longterm: Longterm) -> None:
    made = longterm.pao_json("memory", "add", "pao", "the longterm backend speaks SQL", "--type", "Project")
    assert made["id"] == "obs:pao#0" and made["meta"]["entity_type"] == "Project"
    second = longterm.pao_json("memory", "add", "pao", "a second observation about pao")
    assert second["id"] == "obs:pao#1"
    found = longterm.pao_json("memory", "search", "longterm backend SQL")["items"]
    assert [item["id"] for item in found] == ["obs:pao#0", "obs:pao#1"]  # the hit, then its entity's other observation
    code, _, err = longterm.pao("memory", "add", "pao", "   ")
    assert code == 2 and err.count("\n") == 1


def test_init_is_idempotent(longterm: Longterm) -> None:
    for _ in range(2):
        code, out, _ = longterm.pao("memory", "init")
        assert code == 0 and "schema ready" in out
    stats = longterm.pao_json("memory", "stats")
    assert stats["observations"] == 0


def test_init_creates_the_search_indexes(longterm: Longterm) -> None:
    code, _, err = longterm.pao("memory", "init")
    assert code == 0, err
    if longterm.url:
        import psycopg

        with psycopg.connect(longterm.url, connect_timeout=10) as connection:
            rows = connection.execute(
                "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = %s", (longterm.schema,)
            ).fetchall()
        definitions = {name: definition for name, definition in rows}
        assert "USING gin (search_vector)" in definitions["observations_search_vector_gin"]
        assert "gin_trgm_ops" in definitions["observations_content_trgm"]
        # Entity-name matches of a topic are index lookups, not a to_tsvector of every name.
        assert "USING gin (to_tsvector('english'::regconfig, name))" in definitions["entities_name_tsv_gin"]
    else:
        import sqlite3

        with sqlite3.connect(longterm.home / "longterm.sqlite3") as connection:
            names = {row[0] for row in connection.execute("SELECT name FROM sqlite_master")}
        assert {"observations_fts", "observations_fts_ai", "observations_fts_ad"} <= names


def test_malformed_line_names_its_number_and_imports_nothing(longterm: Longterm, tmp_path: Path) -> None:
    longterm.pao("memory", "init")
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        '{"type":"entity","name":"A","entityType":"T","observations":["one","two"]}\n'
        "\n"
        '{"type":"relation","from":"A","to":"B"}\n'
    )
    code, _, err = longterm.pao("memory", "import", str(bad))
    assert code == 1
    assert f"{bad}:3:" in err and "relationType" in err and err.count("\n") == 1
    broken_json = tmp_path / "broken.jsonl"
    broken_json.write_text('{"type":"entity","name":"A","observations":["x"]}\n{"type": "entity", "name": \n')
    code, _, err = longterm.pao("memory", "import", str(broken_json))
    assert code == 1 and f"{broken_json}:2: not valid JSON" in err
    stats = longterm.pao_json("memory", "stats")
    assert stats["observations"] == 0 and stats["entities"] == 0


def test_import_of_a_missing_file_is_one_line(longterm: Longterm, tmp_path: Path) -> None:
    code, _, err = longterm.pao("memory", "import", str(tmp_path / "nope.jsonl"))
    assert code == 1 and "cannot read" in err and err.count("\n") == 1


def test_relation_to_an_unknown_entity_creates_it(longterm: Longterm, tmp_path: Path) -> None:
    source = tmp_path / "rel.jsonl"
    source.write_text('{"type":"relation","from":"Ada","to":"Analytical Engine","relationType":"designed"}\n')
    result = longterm.pao_json("memory", "import", str(source))
    assert result["added"] == {"entities": 2, "observations": 0, "relations": 1}


def test_fresh_machine_without_store(pao_env: Path) -> None:
    from longterm_helpers import Longterm as Env

    env = Env("sqlite", pao_env / "pao", pao_env / "config.toml", None, None)
    briefing = env.pao_json("brief", "anything at all")
    assert briefing["backends"]["longterm"]["status"] == "ok"
    assert briefing["backends"]["longterm"]["count"] == 0
    assert not (pao_env / "pao" / "longterm.sqlite3").exists()
    stats = env.pao_json("memory", "stats")
    assert stats["exists"] is False


def test_embedded_search_does_not_import_sqlalchemy(pao_env: Path) -> None:
    """`pao brief` runs at every spawn: on the embedded store it reads with sqlite3 alone."""
    from longterm_helpers import Longterm as Env

    env = Env("sqlite", pao_env / "pao", pao_env / "config.toml", None, None)
    env.pao("memory", "import", str(EVAL_MEMORY))
    script = (
        "import json, sys\n"
        "from pao_core.cli import main\n"
        "code = main(['brief', 'Gus smells like acetone', '--json'])\n"
        "print(json.dumps({'code': code, 'sqlalchemy': 'sqlalchemy' in sys.modules}), file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False)
    verdict = json.loads(done.stderr.strip().splitlines()[-1])
    briefing = json.loads(done.stdout)
    assert verdict == {"code": 0, "sqlalchemy": False}
    assert [i["id"] for i in briefing["items"] if i["backend"] == "longterm"][0] == "obs:Gus#7"
