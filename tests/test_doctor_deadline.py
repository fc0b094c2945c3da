"""``pao doctor``'s deadline fits a slow store: a real PostgreSQL whose table is locked past the spawn's deadline
answers late (a WARN with its time), a stopped one fails. Real server, real lock, no stand-in."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from pao_core.cli import main

REPO = Path(__file__).resolve().parents[1]
SAMPLE_MEMORY = REPO / "docs" / "examples" / "sample-memory.jsonl"
DEADLINE = 0.5
HELD = 2.0


def longterm_check(capsys: pytest.CaptureFixture[str]) -> tuple[dict, float]:
    capsys.readouterr()
    started = time.monotonic()
    main(["doctor", "--json"])
    elapsed = time.monotonic() - started
    report = json.loads(capsys.readouterr()[0])
    return next(c for c in report["checks"] if c["area"] == "backend" and c["name"] == "longterm"), elapsed


def test_a_store_slower_than_the_deadline_is_a_warning_with_its_time(
        pao_config_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import psycopg
    from pao_testing.postgres import ThrowawayCluster

    cluster = ThrowawayCluster.start()
    try:
        pao_config_file.write_text(f'[gather]\ndeadline = {DEADLINE}\n[backends.longterm]\nurl = "{cluster.url}"\n'
                                   f'schema = "slow"\n')
        assert main(["memory", "init"]) == 0 and main(["memory", "import", str(SAMPLE_MEMORY)]) == 0
        check, _ = longterm_check(capsys)
        assert check["status"] == "ok", check  # quick while nothing holds it
        locker = psycopg.connect(cluster.url)
        locker.execute("LOCK TABLE slow.observations IN ACCESS EXCLUSIVE MODE")
        release = threading.Timer(HELD, locker.close)
        release.start()
        try:
            check, _ = longterm_check(capsys)
        finally:
            release.join()
        assert check["status"] == "warn", check
        assert check["data"]["latency_ms"] >= DEADLINE * 1000 and "slower than the [gather] deadline" in check["line"]
        assert f"{check['data']['latency_ms']:.0f} ms"[:2] in check["line"] and "start the store" not in check["fix"]
        cluster.kill()
        check, elapsed = longterm_check(capsys)
        assert check["status"] == "fail" and "unreachable" in check["line"] and elapsed < 15, check  # a real error
    finally:
        cluster.stop()
