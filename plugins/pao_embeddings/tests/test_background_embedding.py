"""What a search brought in from a live source gets its vectors in the background.

Real processes throughout: ``pao brief`` syncs the MCP memory file and indexes new
transcripts within its bound, and the job it leaves (``pao_embeddings.later``) embeds
them once it has ended, on the idle scheduling class, one job per store.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pao_embeddings.later import last_job
from pao_embeddings.model import available
from pao_testing.homes import pao_held_open

pytestmark = pytest.mark.skipif(not available() and not os.environ.get("PAO_REQUIRE_EMBEDDINGS"),
                                reason="the embeddings extra is not installed")

JOB_WAIT_S = 90.0


@pytest.fixture(autouse=True)
def jobs_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PAO_BACKGROUND_EMBEDDING", "1")


def _pao(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pao_core", *args], capture_output=True, text=True, timeout=timeout)


def _memory_file(tmp_path: Path, observations: list[str]) -> Path:
    memory = tmp_path / "memory.jsonl"
    memory.write_text(json.dumps({"type": "entity", "name": "billing", "entityType": "service",
                                  "observations": observations}) + "\n")
    return memory


def _retrieval() -> str:
    done = _pao("memory", "stats", "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["retrieval"]


def _until(check, what: str, timeout: float = JOB_WAIT_S):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.2)
    raise AssertionError(f"{what}: not within {timeout:.0f} s; job log: {_log('longterm')!r} {_log('history')!r}")


def _log(name: str) -> str:
    path = Path(os.environ["PAO_HOME"]) / "background" / f"{name}.log"
    return path.read_text() if path.exists() else ""


def _job_pids() -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        try:
            words = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"pao_embeddings.later" in words and any(os.environ["PAO_HOME"].encode() in word for word in words):
            pids.append(int(entry.name))
    return pids


def test_observations_a_brief_synced_from_the_memory_file_get_vectors_after_it(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PAO_MEMORY_FILE", str(_memory_file(tmp_path, ["keeps user sessions in valkey",
                                                                      "bills customers on the first of the month"])))
    done = _pao("brief", "where does billing keep sessions")
    assert done.returncode == 0, done.stderr
    assert "valkey" in done.stdout  # found lexically by the brief that synced it
    assert _until(lambda: _retrieval().startswith("semantic + lexical ("), "vectors of the synced observations")
    assert _log("longterm").count("pao memory sync") == 1 and "embedded 2 observations" in _log("longterm")
    assert re.fullmatch(r"background embedding: last job \d{4}-\d\d-\d\d \d\d:\d\d:\d\d ok",
                        last_job("longterm", Path(os.environ["PAO_HOME"])) or "")
    assert oct(os.stat(Path(os.environ["PAO_HOME"]) / "background" / "longterm.log").st_mode & 0o777) == "0o600"


def test_the_job_waits_for_the_searching_process_runs_on_idle_cpu_and_runs_once(monkeypatch, tmp_path: Path) -> None:
    """One job per store: the first search that synced starts it and hands it the store's lock;
    the second finds the lock held, starts no process, and leaves its work to that job, which
    starts once the searcher has ended (or WAIT_S after it searched, whichever is first) and runs
    its command once for both."""
    memory = _memory_file(tmp_path, ["keeps user sessions in valkey"])
    monkeypatch.setenv("PAO_MEMORY_FILE", str(memory))
    ended = tmp_path / "ended"
    # one process searches twice, the memory file edited in between, then lives on for a while
    searcher = subprocess.Popen([sys.executable, "-c", (
        "import pathlib, sys, time\n"
        "from pao_core.cli import main\n"
        "assert main(['memory', 'search', 'billing sessions']) == 0\n"
        f"pathlib.Path({str(memory)!r}).write_text(pathlib.Path({str(memory)!r}).read_text().replace("
        "'valkey', 'valkey with a 30 minute TTL'))\n"
        "assert main(['memory', 'search', 'billing sessions ttl']) == 0\n"
        "print('searched', time.time(), flush=True)\n"
        "sys.stdin.read()\n"
        f"pathlib.Path({str(ended)!r}).write_text(repr(time.time()))\n"
    )], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert searcher.stdout is not None and searcher.stdin is not None
    searched = next(float(line.split()[1]) for line in iter(searcher.stdout.readline, "") if line.startswith("searched"))
    jobs = _job_pids()
    assert len(jobs) == 1, jobs  # the second sync found the first one's job holding the lock: it started none
    # its first act, before it waits (its interpreter's start-up ran at the searcher's priority)
    assert _until(lambda: os.sched_getscheduler(jobs[0]) == os.SCHED_IDLE, "the idle scheduling class", timeout=30)
    time.sleep(1.0)  # the searcher lives on meanwhile
    searcher.stdin.close()
    assert searcher.wait(timeout=30) == 0
    assert _until(lambda: _retrieval().startswith("semantic + lexical ("), "vectors after the searcher ended")
    started = _log("longterm").splitlines()[0].split(" ", 1)[0]
    from datetime import datetime

    from pao_embeddings.later import WAIT_S

    # it waited for the searcher to end; on a machine so slow that WAIT_S passed first, for WAIT_S
    assert datetime.fromisoformat(started).timestamp() >= min(float(ended.read_text()), searched + WAIT_S) - 0.01
    assert _log("longterm").count("pao memory sync") == 1  # both edits seen by one run
    assert _until(lambda: not _job_pids(), "the job's end")


def test_transcripts_a_brief_indexed_get_vectors_and_the_rest_indexed_after_it(monkeypatch, pao_config_file: Path) -> None:
    pao_config_file.write_text("[backends.history]\nrefresh_seconds = 0.001\n")  # too short for every file
    sessions = Path(os.environ["HOME"]) / ".claude" / "projects" / "-home-sam-code-api"
    sessions.mkdir(parents=True)
    for n in range(40):
        lines = [json.dumps({"type": kind, "uuid": f"{kind}{n}", "sessionId": f"s{n}", "timestamp": "2026-11-30T08:00:00Z",
                             "cwd": "/home/sam/code/api", "message": {"role": kind, "content": text}}) + "\n"
                 for kind, text in (("user", f"why does job {n} of the nightly export time out"),
                                    ("assistant", [{"type": "text", "text": f"Job {n} waited on a lock; gave it a timeout."}]))]
        (sessions / f"s{n}.jsonl").write_text("".join(lines))
    done = _pao("brief", "nightly export job times out")
    assert done.returncode == 0, done.stderr

    def stats() -> dict | None:
        found = _pao("history", "stats", "--json")
        counts = json.loads(found.stdout) if found.returncode == 0 else {}
        return counts if counts.get("sessions") == 40 and counts.get("vectors") == counts.get("exchanges") else None

    counts = _until(stats, "every transcript indexed and embedded")
    assert counts["semantic_search"].startswith("semantic + lexical (")
    assert "pao history index" in _log("history")


def test_without_the_option_no_job_starts(monkeypatch, tmp_path: Path, pao_config_file: Path) -> None:
    pao_config_file.write_text("[backends.longterm]\nbackground_embedding = false\n")
    monkeypatch.setenv("PAO_MEMORY_FILE", str(_memory_file(tmp_path, ["keeps user sessions in valkey"])))
    done = _pao("brief", "where does billing keep sessions")
    assert done.returncode == 0, done.stderr
    assert "valkey" in done.stdout
    # a job would have been started (its marker, lock and log made, its process run) before the brief ended
    background = Path(os.environ["PAO_HOME"]) / "background"
    assert not _job_pids() and not any((background / f"longterm.{part}").exists() for part in ("pending", "lock", "log"))
    assert _retrieval().startswith("lexical only: none of the 1 observations")


def test_a_job_that_fails_is_reported_with_its_error(monkeypatch, tmp_path: Path) -> None:
    memory = _memory_file(tmp_path, ["keeps user sessions in valkey"])
    monkeypatch.setenv("PAO_MEMORY_FILE", str(memory))
    # the file synced by the search is gone by the time the job runs its sync
    done = subprocess.run([sys.executable, "-c", (
        "import pathlib\n"
        "from pao_core.cli import main\n"
        "assert main(['memory', 'search', 'billing sessions']) == 0\n"
        f"pathlib.Path({str(memory)!r}).unlink()\n"
    )], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    home = Path(os.environ["PAO_HOME"])
    said = _until(lambda: (lambda job: job if job and "running" not in job else None)(last_job("longterm", home)),
                  "the failed job's outcome")
    assert "failed (exit 1): pao: memory sync: memory file" in said and str(home / "background" / "longterm.log") in said
    # what the doctor line quotes of a log leaves pao cleaned: no terminal escape, no secret
    with open(home / "background" / "longterm.log", "a") as log:
        log.write("2026-12-02T10:00:00.000+00:00 pao memory sync\n"
                  "pao: memory sync: \x1b]0;owned\x07 line 3 has ghp_abcdefghijklmnopqrstuvwxyz0123456789\nexit 1\n")
    said = last_job("longterm", home) or ""
    assert "failed (exit 1): pao: memory sync:" in said and "\x1b" not in said and "ghp_abcdefghijklmnop" not in said


# -- large writes: lexical at once, vectors from the background job ------------------------------------


def _in_process(*argv: str) -> dict:
    """``pao ARGV --json`` in this process, for a command that starts no job (one would wait for pytest
    to end, at most WAIT_S: :func:`pao_testing.homes.pao_held_open` runs those)."""
    from pao_core.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([*argv, "--json"])
    assert code == 0, err.getvalue()
    return json.loads(out.getvalue())


def test_without_background_jobs_an_import_embeds_in_its_own_process(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PAO_BACKGROUND_EMBEDDING", "0")
    report = _in_process("memory", "import", str(_memory_file(tmp_path, ["keeps user sessions in valkey"])))
    assert report["vectors"] == {"embedded": 1, "removed": 0, "retrieval": "semantic + lexical"}
    assert not _job_pids() and _log("longterm") == ""


def _transcripts(root: Path, count: int, first: int = 0) -> Path:
    sessions = root / "-home-sam-code-api"
    sessions.mkdir(parents=True)
    for n in range(first, first + count):
        lines = [json.dumps({"type": kind, "uuid": f"{kind}{n}", "sessionId": f"s{n}", "timestamp": "2026-11-30T08:00:00Z",
                             "cwd": "/home/sam/code/api", "message": {"role": kind, "content": text}}) + "\n"
                 for kind, text in (("user", f"why does job {n} of the nightly export time out"),
                                    ("assistant", [{"type": "text", "text": f"Job {n} waited on a lock; gave it a timeout."}]))]
        (sessions / f"s{n}.jsonl").write_text("".join(lines))
    return root


def test_history_index_leaves_the_vectors_to_the_job_and_embed_does_them_here(tmp_path: Path) -> None:
    from pao_embeddings.later import WAIT_S

    folder = _transcripts(tmp_path / "projects", 5)
    started = time.monotonic()
    with pao_held_open("history", "index", str(folder), "--json") as indexed:  # the job waits for it to end
        assert indexed.returncode == 0, indexed.stderr
        report = json.loads(indexed.stdout)
        assert report["exchanges_added"] == 5 and report["exchanges_embedded"] == 0
        if time.monotonic() - started < WAIT_S - 2:  # the job still waits for the indexer: lexical until then
            assert _in_process("history", "stats")["vectors"] == 0
    _until(lambda: (lambda s: s["vectors"] == 5)(json.loads(_pao("history", "stats", "--json").stdout)),
           "the index's vectors from the job")
    assert f"pao history index {folder} --embed" in _log("history")
    more = _transcripts(tmp_path / "more", 2, first=5)
    again = _in_process("history", "index", str(more), "--embed")  # what the job runs: embeds in its process
    assert again["exchanges_embedded"] == 2 and _in_process("history", "stats")["vectors"] == 7
