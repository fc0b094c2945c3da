"""``pao spawn --host codex|gemini`` for real: the whole pipeline, then ``pao list`` shows the host.

The pinned CLI runs in tmux through the pao-tmux driver against its loopback stub;
the briefing comes from the pao-notes example backend (``~/notes.md``), so the marker
the stub must receive exists only in memory. As root these tests fail (never skip)
outside a loopback-only network namespace: scripts/test provides one.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from pao_testing.host_cases import CASES
from pao_testing.hostrun import fail_unless_loopback_only

RUNNER = Path(__file__).parent / "hosts_support" / "pao_with_notes.py"
MARKER = "WOMBAT-4412"
CONTEXT = {"codex": None, "gemini": ("GEMINI.md", "@./CONTEXT_BRIEFING.md")}
"""Codex gets the briefing through its session channel (no file in the folder); Gemini's context file imports it."""


def _pao(env: dict[str, str], *args: str, timeout: float = 150) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(RUNNER), *args], env=env, capture_output=True, text=True, timeout=timeout)


@pytest.mark.realcli
@pytest.mark.parametrize("host", sorted(CASES))
def test_pao_spawn_starts_a_primed_agent_on_each_host(host: str, tmp_path: Path, isolated_home: Path) -> None:
    fail_unless_loopback_only()
    case = CASES[host]
    assert case.binary is not None and case.binary.exists(), f"{case.binary} is missing: run scripts/setup --test"
    home = isolated_home / "user"
    (home / "notes.md").write_text(f"- The billing exporter writes its retry ledger to {MARKER}.csv.\n")
    folder = tmp_path / "billing"
    folder.mkdir()
    subprocess.run(["git", "init", "-q", str(folder)], check=True)
    socket = f"pao-test-{os.getpid()}-spawn-{host}"
    with case.make_stub() as stub:
        # CI=true as in a CI job's shell: the agent must start interactive all the same
        env = {**os.environ, **case.user_setup(home, stub), "PAO_LOAD_PLUGINS": "pao-agents,pao-tmux,pao-hosts", "CI": "true",
               "PAO_TMUX_SOCKET": socket, case.command_variable: str(case.binary), "TERM": "xterm-256color"}
        record: dict = {}
        try:
            spawned = _pao(env, "spawn", "fix the billing exporter retries", "--folder", str(folder), "--host", host, "--json")
            assert spawned.returncode == 0, spawned.stderr
            record = json.loads(spawned.stdout)
            assert record["host"] == host and record["state"] == "busy" and record["session_id"]

            sent = stub.wait_for_text(case.model_route, MARKER, 60)
            assert sent is not None, f"no request carried the memory marker: {[r.path for r in stub.requests]}"
            if CONTEXT[host] is None:
                assert sorted(p.name for p in folder.iterdir()) == [".git"], "the session channel wrote into the folder"
            else:
                context_file, expected = CONTEXT[host]
                assert expected in (folder / context_file).read_text(), "the briefing reached the host's context file"

            listing = _pao(env, "list", "--json")
            assert listing.returncode == 0, listing.stderr
            listed = [(row["name"], row["host"]) for row in json.loads(listing.stdout)["agents"]]
            assert listed == [("fix-billing-exporter-retries", host)]  # named from the topic
        finally:
            if record.get("pid"):
                _end_group(record["pid"])  # pao kill closes the window; Gemini CLI outlives the hang-up
            _pao(env, "kill", "fix-billing-exporter-retries", timeout=30)
            subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True, check=False)


def _end_group(pid: int) -> None:
    try:
        os.killpg(os.getpgid(pid), signal.SIGKILL)
    except ProcessLookupError:
        pass
