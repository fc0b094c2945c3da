"""``pao doctor``: every failure path with the real part broken (PostgreSQL, an HTTP port, files, tmux).

The host CLI is a stand-in script that prints a pinned Claude Code version (the real
CLI's ``--version`` is read by plugins/pao_hosts/tests/test_host_profiles.py); everything else is real:
the embedded stores loaded by ``pao memory import`` and ``pao history index``, a
throwaway PostgreSQL cluster, a closed loopback port, a private tmux server.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import socket
import sys
import time
import uuid
from pathlib import Path
from typing import Iterator

import pytest

from pao_core.cli import main
from pao_core.files import state_lock
from pao_hosts.claude_code import KNOWN_VERSIONS
from pao_agents.spec import AgentRecord
from pao_agents.registry import JsonRegistry

REPO = Path(__file__).resolve().parents[1]
SAMPLE_MEMORY = REPO / "docs" / "examples" / "sample-memory.jsonl"
TRANSCRIPTS = REPO / "tests" / "data" / "eval" / "transcripts"


def doctor(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict]:
    capsys.readouterr()
    code = main(["doctor", "--json", *args])
    out, _ = capsys.readouterr()
    return code, json.loads(out)


def by_area(report: dict, area: str) -> dict[str, dict]:
    return {check["name"]: check for check in report["checks"] if check["area"] == area}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def user(isolated_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A user who finished Claude Code's first run, with a stand-in `claude` and a private tmux socket."""
    home = isolated_home / "user"
    (home / ".claude.json").write_text(json.dumps({"hasCompletedOnboarding": True, "numStartups": 3}))
    cli = isolated_home / "bin" / "claude"
    cli.parent.mkdir()
    cli.write_text(f"#!/bin/sh\necho '{KNOWN_VERSIONS[-1]} (Claude Code)'\n")
    cli.chmod(0o755)
    monkeypatch.setenv("PAO_CLAUDE_COMMAND", str(cli))
    monkeypatch.setenv("PAO_TMUX_SOCKET", f"pao-doctor-{os.getpid()}-{uuid.uuid4().hex[:6]}")
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    return home


@pytest.fixture
def loaded(user: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """Both embedded stores loaded through the plugins' own commands."""
    assert main(["memory", "import", str(SAMPLE_MEMORY)]) == 0
    assert main(["history", "index", str(TRANSCRIPTS)]) == 0
    capsys.readouterr()
    return user


def test_a_healthy_setup_passes_and_reports_each_part(loaded: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, report = doctor(capsys, "--query", "refresh token logout")
    assert code == 0 and report["ok"], report
    host = by_area(report, "host")["claude-code"]
    assert host["status"] == "ok" and host["data"]["version"] == KNOWN_VERSIONS[-1]
    assert "pao knows its screens" in host["line"]
    files = by_area(report, "host-file")
    assert files["claude-code:~/.claude.json"]["status"] == "ok"
    tmux = by_area(report, "terminal")["tmux"]
    assert tmux["status"] == "ok" and tmux["data"]["version"][0].isdigit()
    backends = by_area(report, "backend")
    assert set(backends) == {"longterm", "history"}
    assert backends["longterm"]["data"]["items"] > 0 and backends["longterm"]["data"]["latency_ms"] > 0
    assert all(b["status"] == "ok" for b in backends.values())
    stores = by_area(report, "store")
    assert {name.split(":")[0] for name in stores} == {"longterm", "history"}
    assert all(store["status"] == "ok" and store["data"]["bytes"] > 0 for store in stores.values())

    capsys.readouterr()
    assert main(["doctor"]) == 0
    text = capsys.readouterr().out
    assert "0 failed" in text and "FAIL" not in text


def test_a_fresh_machine_names_what_is_missing(user: Path, capsys: pytest.CaptureFixture[str],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PAO_CLAUDE_COMMAND")
    monkeypatch.setenv("PATH", os.path.dirname(sys.executable))  # no claude, no tmux
    code, report = doctor(capsys)
    assert code == 1 and not report["ok"]
    host = by_area(report, "host")["claude-code"]
    assert host["status"] == "fail" and "npm install -g @anthropic-ai/claude-code" in host["fix"]
    tmux = by_area(report, "terminal")["tmux"]
    assert tmux["status"] == "fail" and "tmux is not installed" in tmux["line"]
    stores = by_area(report, "store")
    assert all(store["status"] == "warn" and "does not exist yet" in store["line"] for store in stores.values())
    assert "pao memory import" in " ".join(store["fix"] for store in stores.values())
    assert "pao history index" in " ".join(store["fix"] for store in stores.values())


@pytest.mark.parametrize(("prints", "said"), [
    ("0.0.1 (Claude Code)", "older than all of them: pao treats it as the oldest, 2.0.77"),
    ("2.1.100 (Claude Code)", "up to this one (the nearest measured: 2.0.77)"),
    ("9.0.0 (Claude Code)", "newer: pao treats it as the newest it knows, 2.1.332"),
    ("claude, a custom build", "pao cannot read this version"),  # it runs: a warning, not "not found"
])
def test_an_unknown_cli_version_is_a_warning_saying_how_pao_treats_it(user: Path, capsys: pytest.CaptureFixture[str],
                                                                      prints: str, said: str) -> None:
    cli = Path(os.environ["PAO_CLAUDE_COMMAND"])
    cli.write_text(f"#!/bin/sh\necho '{prints}'\n")
    code, report = doctor(capsys)
    host = by_area(report, "host")["claude-code"]
    assert code == 0 and host["status"] == "warn" and "not this version" in host["line"] and said in host["line"], host


def test_a_stopped_postgresql_fails_within_the_deadline(user: Path, pao_config_file: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    from pao_testing.postgres import PASSWORD, ThrowawayCluster

    cluster = ThrowawayCluster.start()
    try:
        pao_config_file.write_text(f'[backends.longterm]\nurl = "{cluster.url}"\n')
        assert main(["memory", "import", str(SAMPLE_MEMORY)]) == 0
        code, report = doctor(capsys)
        longterm = by_area(report, "backend")["longterm"]
        assert longterm["status"] == "ok" and longterm["data"]["items"] >= 0
        assert not any(name.startswith("longterm:") for name in by_area(report, "store"))  # a server, no file
        cluster.kill()
        started = time.monotonic()
        code, report = doctor(capsys)
        assert time.monotonic() - started < 2.0 + 15
        longterm = by_area(report, "backend")["longterm"]
        assert code == 1 and longterm["status"] == "fail"
        assert "unreachable" in longterm["line"] and "[backends.longterm]" in longterm["fix"]
        assert PASSWORD not in json.dumps(report)
    finally:
        cluster.stop()


def test_a_refusing_history_server_fails(user: Path, monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("PAO_HISTORY_URL", f"http://127.0.0.1:{free_port()}/rpc")
    code, report = doctor(capsys)
    history = by_area(report, "backend")["history"]
    assert code == 1 and history["status"] == "fail"
    assert "connection refused" in history["line"]
    assert not any(name.startswith("history:") for name in by_area(report, "store"))


def test_a_corrupt_claude_json_fails_and_is_left_alone(user: Path, capsys: pytest.CaptureFixture[str]) -> None:
    broken = '{"hasCompletedOnboarding": true, "projects": {'
    (user / ".claude.json").write_text(broken)
    code, report = doctor(capsys)
    check = by_area(report, "host-file")["claude-code:~/.claude.json"]
    assert code == 1 and check["status"] == "fail"
    assert "not valid JSON" in check["line"] and "pao never overwrites" in check["fix"]
    assert (user / ".claude.json").read_text() == broken


def test_missing_consent_fails(user: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (user / ".claude.json").write_text("{}")
    code, report = doctor(capsys)
    consent = by_area(report, "host-consent")["claude-code"]
    assert code == 1 and "run `claude` once yourself" in consent["line"]


def _exit_at_once() -> None:
    return None


def test_a_leftover_lock_file_is_free(loaded: Path, isolated_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A lock file naming a dead (or reused) pid, or another machine, holds nothing: only a live flock does."""
    dead = multiprocessing.get_context("spawn").Process(target=_exit_at_once)
    dead.start()
    dead.join()
    lock = isolated_home / "pao" / "agents.json.lock"
    lock.write_text(json.dumps({"pid": dead.pid, "host": "elsewhere.example", "time": time.time() - 600}))
    code, report = doctor(capsys)
    assert by_area(report, "registry")["lock"]["line"] == "registry lock: free"
    JsonRegistry(isolated_home / "pao").add(AgentRecord("x", "/tmp", "t", "claude-code", "tmux", ""))
    with state_lock(lock), multiprocessing.get_context("spawn").Pool(1) as pool:
        held = pool.apply(_lock_line, (str(lock),))
    assert held.startswith("registry lock: held right now by a pao process")


def _lock_line(lock: str) -> str:
    from pao_agents.checks import _check_lock

    return _check_lock(Path(lock)).line


def test_an_unreadable_registry_fails(user: Path, isolated_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (isolated_home / "pao" / "agents.json").write_text("{oops")
    code, report = doctor(capsys)
    check = by_area(report, "registry")["agents.json"]
    assert code == 1 and check["status"] == "fail" and "not valid JSON" in check["line"]


@pytest.fixture
def tmux_driver(user: Path) -> Iterator[object]:
    from pao_tmux.driver import TmuxDriver, TmuxOptions

    driver = TmuxDriver(TmuxOptions(socket=os.environ["PAO_TMUX_SOCKET"]))
    yield driver
    import subprocess

    subprocess.run(["tmux", "-L", os.environ["PAO_TMUX_SOCKET"], "kill-server"], capture_output=True, check=False)


def test_agents_whose_process_is_gone_are_named(loaded: Path, isolated_home: Path, tmux_driver,
                                                capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    registry = JsonRegistry(isolated_home / "pao")
    targets = {}
    for name in ("alive", "gone"):
        targets[name] = tmux_driver.spawn(name, str(tmp_path), ["sleep", "120"], dict(os.environ))
        registry.add(AgentRecord(name, str(tmp_path), "t", "claude-code", "tmux", targets[name], state="busy"))
    os.kill(tmux_driver.pid(targets["gone"]), 9)
    deadline = time.monotonic() + 5
    while tmux_driver.is_alive(targets["gone"]) and time.monotonic() < deadline:
        time.sleep(0.05)
    registry.add(AgentRecord("never-started", str(tmp_path), "t", "claude-code", "tmux", "", state="starting"))
    registry.add(AgentRecord("napping", str(tmp_path), "t", "claude-code", "tmux", "", state="paused"))
    code, report = doctor(capsys)
    agents = by_area(report, "agent")
    assert set(agents) == {"gone", "never-started"}
    assert "its process is gone" in agents["gone"]["line"] and "pao resume gone" in agents["gone"]["fix"]
    assert code == 0
    assert by_area(report, "registry")["agents.json"]["data"]["agents"] == 4


def test_a_plugin_with_a_bad_table_fails(user: Path, pao_config_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The configuration is checked before any command runs, doctor's too: one line naming the table."""
    pao_config_file.write_text('[backends.history]\nprotocol = "carrier-pigeon"\n')
    capsys.readouterr()
    assert main(["doctor", "--json"]) == 2
    out, err = capsys.readouterr()
    assert json.loads(out)["code"] == 2 and err.count("\n") == 1 and "backends.history.protocol" in err


def test_hostile_text_in_a_store_error_never_reaches_the_terminal(user: Path, pao_config_file: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    evil = user / "evil\x1b]0;pwned\x07index.sqlite3"
    evil.write_text("not a database")
    escaped = json.dumps(str(evil))  # a TOML basic string accepts JSON's \uXXXX escapes
    pao_config_file.write_text(f"[backends.history]\nindex = {escaped}\n")
    capsys.readouterr()
    assert main(["doctor"]) == 1
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out
    assert "evil" in out and "index.sqlite3" in out  # the line is there, made inert
