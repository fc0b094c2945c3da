"""History that stays fresh: ``pao brief`` indexes new and grown transcripts first, in a bound.

Real transcript files in Claude Code's layout under the test's ``~/.claude/projects``,
the real ``pao`` command line, concurrent real processes.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path

import pytest
from pao_core.files import state_lock
from history_support import PAO, pao, pao_json

PROJECT = "-Users-sam-code-otterbox"


def _line(kind: str, uuid: str, text: str, session: str) -> str:
    content = text if kind == "user" else [{"type": "text", "text": text}]
    return json.dumps({
        "type": kind, "uuid": uuid, "sessionId": session, "timestamp": "2026-11-30T08:00:00.000Z",
        "cwd": "/Users/sam/code/otterbox", "gitBranch": "main", "message": {"role": kind, "content": content},
    }) + "\n"


def exchange(session: str, n: int, prompt: str, reply: str) -> str:
    """One prompt and its reply, as Claude Code appends them."""
    return _line("user", f"{session}-u{n}", prompt, session) + _line("assistant", f"{session}-a{n}", reply, session)


@pytest.fixture
def projects(env: dict[str, str]) -> Path:
    folder = Path(env["HOME"]) / ".claude" / "projects" / PROJECT
    folder.mkdir(parents=True)
    return folder


def brief(env: dict[str, str], topic: str) -> dict:
    return json.loads(pao(env, "brief", topic, "--json").stdout)


def history_ids(briefing: dict) -> list[str]:
    return [item["id"] for item in briefing["items"] if item["backend"] == "history"]


def index_rows(env: dict[str, str], sql: str) -> list[tuple]:
    with sqlite3.connect(Path(env["PAO_HOME"]) / "history.sqlite3") as conn:
        return conn.execute(sql).fetchall()


@pytest.mark.hook("pao_memory_backends")
def test_a_session_of_this_morning_is_found_without_indexing_by_hand(env, projects):
    (projects / "s1.jsonl").write_text(exchange("s1", 1, "the otter feeder jams on wet pellets", "Widened the feeder chute to 12 mm."))
    found = brief(env, "otter feeder jams on wet pellets")
    assert history_ids(found) == ["msg:s1:s1-u1"]
    assert found["backends"]["history"]["status"] == "ok" and found["backends"]["history"]["note"] is None


@pytest.mark.hook("pao_memory_backends")
def test_a_grown_transcript_is_read_from_its_last_exchange_and_never_twice(env, projects):
    path = projects / "s2.jsonl"
    path.write_text(
        exchange("s2", 1, "the walrus gateway drops websocket frames", "Raised the frame limit.")
        + exchange("s2", 2, "now tune the walrus gateway backoff", "Backoff is exponential now.")
    )
    assert "msg:s2:s2-u1" in history_ids(brief(env, "walrus gateway websocket frames"))
    # The first exchange is complete: an incremental read never looks at it again. Change
    # its words in place (same length), then append a third exchange.
    text = path.read_text()
    path.write_text(text.replace("websocket frames", "websocket FRAMES"))
    with path.open("a") as handle:
        handle.write(exchange("s2", 3, "walrus gateway crashes on SIGHUP reload", "Handled SIGHUP in the gateway."))
    found = brief(env, "walrus gateway crashes on SIGHUP reload")
    assert "msg:s2:s2-u3" in history_ids(found)
    prompts = index_rows(env, "SELECT id, prompt FROM exchanges ORDER BY start_offset")
    assert [row[0] for row in prompts] == ["msg:s2:s2-u1", "msg:s2:s2-u2", "msg:s2:s2-u3"]  # no duplicates
    assert "websocket frames" in prompts[0][1]  # read once, not re-read from byte 0


@pytest.mark.hook("pao_memory_backends")
def test_a_deleted_transcript_leaves_the_index(env, projects):
    path = projects / "s3.jsonl"
    path.write_text(exchange("s3", 1, "narwhal cache stampede at midnight", "Added jitter to the TTLs."))
    assert history_ids(brief(env, "narwhal cache stampede")) == ["msg:s3:s3-u1"]
    path.unlink()
    assert history_ids(brief(env, "narwhal cache stampede")) == []
    assert index_rows(env, "SELECT count(*) FROM files") == [(0,)]


@pytest.mark.hook("pao_memory_backends")
def test_what_does_not_fit_the_budget_is_left_and_said(env, projects, tmp_path):
    filler = "x" * 20000  # 20 kB a file: at the assumed 5 MB/s, 4 ms each, past a 1 ms budget
    for n in range(6):
        (projects / f"b{n}.jsonl").write_text(exchange(f"b{n}", 1, f"beaver dam survey number {n}", filler))
    Path(env["PAO_CONFIG"]).write_text("[backends.history]\nsemantic = false\nrefresh_seconds = 0.001\n")
    done = pao(env, "brief", "beaver dam survey", "--json")
    note = json.loads(done.stdout)["backends"]["history"]["note"]
    assert note.startswith("6 new or grown transcripts (") and "not indexed yet" in note
    assert "6 new or grown transcripts" in json.loads(done.stdout)["markdown"]  # the briefing's status says it too
    plain = pao(env, "brief", "beaver dam survey")
    assert "pao: backend history: 6 new or grown transcripts" in plain.stderr
    Path(env["PAO_CONFIG"]).write_text("[backends.history]\nsemantic = false\n")
    found = brief(env, "beaver dam survey number 4")
    assert found["backends"]["history"]["note"] is None
    assert "msg:b4:b4-u1" in history_ids(found)
    assert index_rows(env, "SELECT count(*) FROM files") == [(6,)]


@pytest.mark.hook("pao_memory_backends")
def test_a_held_indexing_lock_means_search_the_index_as_it_is(env, projects):
    (projects / "s4.jsonl").write_text(exchange("s4", 1, "heron alerting floods the pager", "Grouped the alerts."))
    assert history_ids(brief(env, "heron alerting floods the pager")) == ["msg:s4:s4-u1"]
    (projects / "s5.jsonl").write_text(exchange("s5", 1, "heron alerting quiet hours", "Added quiet hours."))
    with state_lock(Path(env["PAO_HOME"]) / "history.sqlite3.lock"):
        found = brief(env, "heron alerting quiet hours")
    assert "another pao process is indexing" in found["backends"]["history"]["note"]
    assert "msg:s5:s5-u1" not in history_ids(found)
    assert "msg:s5:s5-u1" in history_ids(brief(env, "heron alerting quiet hours"))


@pytest.mark.hook("pao_memory_backends")
def test_concurrent_processes_index_each_exchange_once(env, projects):
    for n in range(120):
        (projects / f"c{n}.jsonl").write_text(
            exchange(f"c{n}", 1, f"pelican queue shard {n} rebalancing", "Moved the shard.")
            + exchange(f"c{n}", 2, f"pelican queue shard {n} metrics", "Added a gauge.")
        )
    runs = [subprocess.Popen([PAO, "brief", "pelican queue shard rebalancing", "--json"], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(4)]
    runs.append(subprocess.Popen([PAO, "history", "index", "--json"], env=env,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    for run in runs:
        out, err = run.communicate(timeout=600)  # a loaded 2-core machine: minutes
        assert run.returncode == 0, err
    pao(env, "history", "index")
    assert index_rows(env, "SELECT count(*), count(DISTINCT id) FROM exchanges") == [(240, 240)]
    assert index_rows(env, "SELECT count(*) FROM files") == [(120,)]
    assert pao_json(env, "history", "stats")["exchanges"] == 240


@pytest.mark.hook("pao_memory_backends")
def test_an_index_built_from_a_folder_stays_fresh_from_that_folder(env, projects, tmp_path):
    other = tmp_path / "elsewhere" / PROJECT
    other.mkdir(parents=True)
    (other / "e1.jsonl").write_text(exchange("e1", 1, "lemur cron backlog grows nightly", "Split the cron job."))
    pao(env, "history", "index", str(other.parent))
    (other / "e2.jsonl").write_text(exchange("e2", 1, "lemur cron backlog alert threshold", "Alert at 500."))
    (projects / "d1.jsonl").write_text(exchange("d1", 1, "lemur cron backlog in the default folder", "Not indexed."))
    found = history_ids(brief(env, "lemur cron backlog"))
    assert "msg:e2:e2-u1" in found and "msg:d1:d1-u1" not in found  # eval corpora stay apart from ~/.claude
