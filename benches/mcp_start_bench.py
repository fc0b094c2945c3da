"""`python -I -m pao_mcp` (the server a CLI starts for a session): process start to its answer to
``initialize``, and to its answer to the ``tools/list`` sent right after, against `python -I -c pass`
in the same run (interleaved), with every installed plugin and a private PAO_HOME.

Target (issue 30): ``initialize`` answered at p50 <= 150 ms from the start. CPU time is the whole
process's, from its start to its exit after both answers and the end of its input. Run from the
repository root:

    .venv/bin/python benches/mcp_start_bench.py [RUNS] [--json]
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from cao_startup_bench import run_once

TARGET_MS = 150.0
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}}
FOLLOWING = [{"jsonrpc": "2.0", "method": "notifications/initialized"}, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}]
ENV = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE" and not key.startswith("PAO_")}


def _line(message: dict) -> bytes:
    return json.dumps(message).encode() + b"\n"


def handshake_once(env: dict[str, str]) -> tuple[float, float, float]:
    """Milliseconds from the start to the ``initialize`` answer and to the ``tools/list`` answer, and CPU time."""
    started = time.perf_counter()
    server = subprocess.Popen([sys.executable, "-I", "-m", "pao_mcp", "--agent", "bench"], env=env,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert server.stdin is not None and server.stdout is not None
    server.stdin.write(_line(INITIALIZE))  # a CLI writes it as soon as it has started the process
    server.stdin.flush()
    answer = json.loads(server.stdout.readline())
    initialized = (time.perf_counter() - started) * 1000
    assert answer["id"] == 1 and "protocolVersion" in answer["result"], answer
    server.stdin.write(b"".join(map(_line, FOLLOWING)))
    server.stdin.flush()
    tools = json.loads(server.stdout.readline())
    listed = (time.perf_counter() - started) * 1000
    assert [tool["name"] for tool in tools["result"]["tools"]] == ["search_memory", "remember", "memory_status"], tools
    server.stdin.close()
    _, status, usage = os.wait4(server.pid, 0)
    server.returncode = os.waitstatus_to_exitcode(status)
    return initialized, listed, (usage.ru_utime + usage.ru_stime) * 1000


def main(runs: int = 21) -> dict[str, object]:
    with tempfile.TemporaryDirectory(prefix="pao-mcp-start-") as tmp:
        Path(tmp, "config.toml").write_text("")
        env = {**ENV, "PAO_HOME": str(Path(tmp, "pao")), "PAO_CONFIG": str(Path(tmp, "config.toml")),
               "XDG_CACHE_HOME": str(Path(tmp, "cache"))}
        python = [sys.executable, "-I", "-c", "pass"]
        run_once(python, env), handshake_once(env)  # warm-up: bytecode, pao's plugin index
        passes, servers = [], []
        for _ in range(runs):
            passes.append(run_once(python, env))
            servers.append(handshake_once(env))
    initialize_ms = statistics.median(sample[0] for sample in servers)
    return {
        "runs": runs,
        "python_pass_p50_ms": round(statistics.median(sample[0] for sample in passes), 1),
        "python_pass_cpu_p50_ms": round(statistics.median(sample[1] for sample in passes), 1),
        "initialize_p50_ms": round(initialize_ms, 1),
        "initialize_max_ms": round(max(sample[0] for sample in servers), 1),
        "tools_list_p50_ms": round(statistics.median(sample[1] for sample in servers), 1),
        "server_cpu_p50_ms": round(statistics.median(sample[2] for sample in servers), 1),
        "target_ms": TARGET_MS,
        "met": initialize_ms <= TARGET_MS,
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }


if __name__ == "__main__":
    arguments = [argument for argument in sys.argv[1:] if argument != "--json"]
    report = main(int(arguments[0]) if arguments else 21)
    if "--json" in sys.argv:
        json.dump(report, sys.stdout, indent=2)
        print()
    else:
        print(f"initialize p50 {report['initialize_p50_ms']} ms (target <= {TARGET_MS:.0f} ms), tools/list p50 "
              f"{report['tools_list_p50_ms']} ms, server CPU p50 {report['server_cpu_p50_ms']} ms; "
              f"python -I -c pass p50 {report['python_pass_p50_ms']} ms; load {report['load_average']}")
