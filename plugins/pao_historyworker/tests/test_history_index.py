"""The local index through the CLI and the backend object: mapping, floor, incremental reads."""

from __future__ import annotations

import datetime as dt
import json
import time
from pathlib import Path

import pytest
from history_support import pao, pao_json

from pao_core.plugins import load_config
from pao_core.plugins import build_plugins

SESSION = "26779b0a-d1e1-4741-ad78-95ab27300dfa"
PROJECT_DIR = "-Users-sam-code-backchannel"


def history_backend():
    config = load_config()
    backends = [b for b in build_plugins().memory_backends(config) if b.name == "history"]
    assert len(backends) == 1
    return backends[0]


def search(topic: str, limit: int = 10):
    return history_backend().search(topic, limit, time.monotonic() + 5)


def line(kind: str, uuid: str, content, *, session: str = SESSION, parent: str | None = None) -> str:
    return json.dumps(
        {
            "type": kind,
            "uuid": uuid,
            "parentUuid": parent,
            "sessionId": session,
            "timestamp": "2026-03-01T10:00:00.000Z",
            "cwd": "/Users/sam/code/backchannel",
            "gitBranch": "main",
            "message": {"role": kind, "content": content},
        }
    )


@pytest.mark.hook("pao_add_commands")
def test_index_and_stats_count_the_eval_corpus(env, indexed):
    counts = pao_json(env, "history", "stats")
    assert counts["files"] == 46
    assert counts["sessions"] == 46
    assert counts["exchanges"] == 144  # one per user prompt; tool results and summaries are not prompts
    assert counts["projects"] == 13
    assert counts["malformed_lines"] == 0
    assert counts["lines"] == 475
    again = pao_json(env, "history", "index", str(indexed))
    assert again["files_seen"] == 46 and again["files_read"] == 0 and again["exchanges_added"] == 0


@pytest.mark.hook("pao_memory_backends")
def test_an_exchange_maps_to_a_memory_item(env, indexed):
    items = search("Switchboard keeps returning E_NOPANE")
    assert items, "a proper-noun topic from the corpus must match"
    hit = next(item for item in items if "E_NOPANE" in item.text)
    session, uuid = hit.id.split(":")[1:]
    transcript = next(indexed.glob(f"*/{session}.jsonl"))
    lines = [json.loads(raw) for raw in transcript.read_text().splitlines()]
    by_uuid = {entry["uuid"]: entry for entry in lines if "uuid" in entry}
    first = by_uuid[uuid]
    assert first["type"] == "user" and isinstance(first["message"]["content"], str)
    assert hit.kind == "exchange"
    assert hit.meta["session_id"] == session
    assert hit.meta["project"] == "/Users/sam/code/backchannel"
    assert hit.meta["cwd"] == first["cwd"] and hit.meta["git_branch"] == first["gitBranch"]
    assert hit.meta["uuids"][0] == uuid and len(hit.meta["uuids"]) > 1
    assert all(by_uuid[u]["type"] in ("user", "assistant") for u in hit.meta["uuids"])
    assert hit.timestamp is not None and hit.timestamp.tzinfo is not None
    assert hit.timestamp == dt.datetime.fromisoformat(first["timestamp"].replace("Z", "+00:00"))
    assert hit.title == f"backchannel · {hit.timestamp.date().isoformat()}"
    assert hit.text.startswith("User: " + " ".join(first["message"]["content"].split())[:50])
    assert "Assistant: " in hit.text
    assert [item.rank for item in items] == list(range(1, len(items) + 1))
    assert all(a.score >= b.score for a, b in zip(items, items[1:]))


def test_an_unrelated_topic_finds_nothing(env, indexed):
    assert search("plan a drip irrigation schedule for a vegetable garden") == []
    assert search("the and of with") == []


def test_a_keyword_topic_finds_its_session_first(env, indexed):
    items = search("fix the notarization failure in the Mac DMG build")
    assert items and items[0].meta["project"] == "/Users/sam/code/driftnote"
    assert "notari" in items[0].text.lower()


def test_search_without_an_index_says_what_to_do(env, tmp_path: Path):
    found = search("anything")  # a new user: no transcripts folder, so no index either
    assert list(found) == [] and found.note == f"no transcripts in {Path(env['HOME']) / '.claude' / 'projects'} yet: nothing to recall"
    (Path(env["HOME"]) / ".claude" / "projects").mkdir(parents=True)  # transcripts, but no search-time indexing
    Path(env["PAO_CONFIG"]).write_text("[backends.history]\nsemantic = false\nrefresh_seconds = 0\n")
    try:
        search("anything")
    except Exception as exc:
        assert "pao history index" in str(exc)
    else:
        raise AssertionError("a missing index must raise")


def _grow(transcripts: Path, env) -> Path:
    path = transcripts / PROJECT_DIR / f"{SESSION}.jsonl"
    pao(env, "history", "index", str(transcripts))
    return path


def test_incremental_index_reads_only_appended_lines(env, transcripts):
    path = _grow(transcripts, env)
    before = pao_json(env, "history", "stats")
    prompt = line("user", "u-new-1", "the quokka relay drops heartbeats under load")
    half = line("assistant", "a-new-1", [{"type": "text", "text": "Raised the quokka heartbeat window to 30s."}], parent="u-new-1")
    with path.open("a") as handle:
        handle.write(prompt + "\n" + "{not json at all\n" + half[: len(half) // 2])
    report = pao_json(env, "history", "index", str(transcripts))
    assert report["files_read"] == 1 and report["malformed_lines"] == 1
    items = search("quokka relay heartbeats")
    assert items[0].id == f"msg:{SESSION}:u-new-1"
    assert items[0].meta["uuids"] == ["u-new-1"]  # the half-written reply is not read yet
    assert all(item.meta["session_id"] == SESSION for item in items)  # the rest: its session's other turns

    with path.open("a") as handle:
        handle.write(half[len(half) // 2 :] + "\n")
    report = pao_json(env, "history", "index", str(transcripts))
    assert report["files_read"] == 1 and report["malformed_lines"] == 0
    items = search("quokka relay heartbeats")
    assert items[0].id == f"msg:{SESSION}:u-new-1"
    assert sum(item.id == f"msg:{SESSION}:u-new-1" for item in items) == 1
    assert items[0].meta["uuids"] == ["u-new-1", "a-new-1"]
    assert "heartbeat window to 30s" in items[0].text
    after = pao_json(env, "history", "stats")
    assert after["exchanges"] == before["exchanges"] + 1
    assert after["malformed_lines"] == 1  # counted once, not again on the re-read


def test_tool_plumbing_and_noise_are_not_exchanges(env, transcripts):
    path = _grow(transcripts, env)
    noise = [
        json.dumps({"type": "summary", "summary": "zebrafish summary", "leafUuid": "x"}),
        line("user", "n1", "<command-name>/zebrafish</command-name>"),
        line("assistant", "n2", [{"type": "tool_use", "name": "Bash", "input": {"command": "zebrafish"}, "id": "t1"}]),
        json.dumps({"type": "system", "uuid": "n3", "sessionId": SESSION, "content": "zebrafish"}),
        line("user", "n4", "zebrafish side quest") .replace('"type": "user"', '"type": "user", "isSidechain": true'),
        "[1, 2, 3]",
    ]
    with path.open("a") as handle:
        handle.write("\n".join(noise) + "\n")
    report = pao_json(env, "history", "index", str(transcripts))
    assert report["malformed_lines"] == 1  # the JSON array is not a transcript line
    assert search("zebrafish") == []


def test_replaced_and_removed_files(env, transcripts):
    path = _grow(transcripts, env)
    path.write_text(line("user", "r1", "wombat migration plan for the broker") + "\n")
    pao(env, "history", "index", str(transcripts))
    assert [item.id for item in search("wombat migration broker")] == [f"msg:{SESSION}:r1"]
    assert not any(item.meta["session_id"] == SESSION and item.id != f"msg:{SESSION}:r1" for item in search("idempotency key"))
    path.unlink()
    report = pao_json(env, "history", "index", str(transcripts))
    assert report["files_removed"] == 1
    assert search("wombat") == []


def test_bad_input_gives_one_line_and_nonzero_exit(env, tmp_path):
    missing = pao(env, "history", "index", str(tmp_path / "nowhere"), check=False)
    assert missing.returncode != 0 and missing.stderr.count("\n") == 1 and "no such transcripts folder" in missing.stderr
    no_index = pao(env, "history", "stats", check=False)
    assert no_index.returncode != 0 and no_index.stderr.count("\n") == 1 and "pao history index" in no_index.stderr


def test_a_new_user_without_transcripts_gets_an_empty_index(env):
    first = pao(env, "history", "index")
    assert "the history index" in first.stdout and "is empty" in first.stdout
    brief = json.loads(pao(env, "brief", "anything at all", "--json").stdout)
    assert brief["backends"]["history"] == {**brief["backends"]["history"], "status": "ok", "count": 0}


def test_a_damaged_index_is_one_line(env):
    from pathlib import Path

    index = Path(env["PAO_HOME"]) / "history.sqlite3"
    index.parent.mkdir(parents=True)
    index.write_bytes(b"this is not sqlite" * 100)
    done = pao(env, "history", "stats", check=False)
    assert done.returncode != 0 and done.stderr.count("\n") == 1 and "not a usable history index" in done.stderr
