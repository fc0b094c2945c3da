"""The warm brief (pao_postgres.warm_brief, pao_postgres.warm_brief_server) with real ``pao`` processes, a real
server and a real socket, as a user gets it by default (no ``PAO_WARM_BRIEF``; the suite sets ``0`` for the others).

Each test has its own HOME, PAO_HOME, configuration and runtime folder (so its own servers), and stops every
server it started; a server whose key no longer holds (its test's files gone) exits by itself too. Whether a
server answered is read from its own count of briefs, never guessed from timing.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Iterator

import pytest

from pao_postgres import warm_brief
from pao_testing.hostrun import until

MEMORY = Path(__file__).resolve().parent / "data" / "eval2" / "memory.jsonl"
TOPIC = "the ferry app crashes on old handsets"
STAMPS = re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d(:\d\d\+00:00)?|sha256 [0-9a-f]{64}")
"""What differs between two briefs of the same memory a minute apart: the time it was made, and its hash."""

Pao = Callable[..., subprocess.CompletedProcess]


def same(done: subprocess.CompletedProcess) -> tuple[int, str, str]:
    return done.returncode, STAMPS.sub("<stamp>", done.stdout), done.stderr


def same_json(done: subprocess.CompletedProcess) -> tuple[int, str, str]:
    """``brief --json``'s markdown and items (the backends' and the whole's times differ from run to run)."""
    return done.returncode, STAMPS.sub("<stamp>", done.stdout.split('"backends"')[0]), done.stderr


@pytest.fixture
def runtime(isolated_home: Path) -> Iterator[Path]:
    """The runtime folder of this test's servers (short: a socket's path has ~100 bytes); every server stopped after."""
    folder = Path(tempfile.mkdtemp(prefix="pao-run-"))
    yield folder
    env = {**os.environ, "XDG_RUNTIME_DIR": str(folder)}
    pids = [found["pid"] for found in servers(env).values() if found]
    subprocess.run([sys.executable, "-c", "import time; from pao_postgres import warm_brief; "
                    "warm_brief.servers(time.monotonic() + 2, 'stop')"], env=env, timeout=30)
    assert all(gone(pid) for pid in pids), f"servers left running: {pids}"
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def pao(isolated_home: Path, runtime: Path, monkeypatch: pytest.MonkeyPatch) -> Pao:
    """``pao ARGS`` as a new process, in one folder (``-m``'s ``sys.path[0]``: the plugin index's key), as a user
    runs it: the warm brief on unless the test says otherwise; the store holds the second corpus' memory."""
    monkeypatch.delenv(warm_brief.ENV, raising=False)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))

    def run(*args: str, env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "pao_core", *args], capture_output=True, text=True,
                              timeout=timeout, cwd=isolated_home, env={**os.environ, **(env or {})})

    imported = run("memory", "import", str(MEMORY), env={warm_brief.ENV: "0"})  # also writes the plugin index
    assert imported.returncode == 0, imported.stderr
    return run


def servers(env: dict[str, str] | None = None) -> dict[str, dict | None]:
    """Every server of the test's runtime folder with its status (asked from a process of the test's environment)."""
    code = ("import json, time; from pao_postgres import warm_brief; "
            "print(json.dumps({str(k): v for k, v in warm_brief.servers(time.monotonic() + 2).items()}))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30,
                          env=env or dict(os.environ))
    return json.loads(done.stdout or "{}")


def running_server() -> dict:
    """The one server of this test, once it listens (a cold ``pao brief`` started it as it exited)."""
    found = until(lambda: [status for status in servers().values() if status and "pid" in status], bool, 120)
    assert len(found) == 1, found
    return found[0]


def gone(pid: int, timeout: float = 30.0) -> bool:
    def ended() -> bool:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        state = Path(f"/proc/{pid}/stat")  # a zombie has ended too
        return state.exists() and state.read_text().split(") ", 1)[1].startswith("Z")

    try:
        return bool(until(ended, bool, timeout))
    except AssertionError:
        return False


@pytest.mark.hook("pao_shortcuts")
def test_a_warm_brief_prints_what_a_cold_one_prints(pao: Pao, isolated_home: Path) -> None:
    cold = pao("brief", TOPIC, env={warm_brief.ENV: "0"})
    assert cold.returncode == 0 and "ferry" in cold.stdout.lower(), cold.stderr
    starts = pao("brief", TOPIC)  # finds no server: briefs in-process, then starts one as it exits
    assert same(starts) == same(cold)
    server = running_server()

    warm = pao("brief", TOPIC)
    cold_json, warm_json = pao("brief", "--json", TOPIC, env={warm_brief.ENV: "0"}), pao("brief", "--json", TOPIC)
    missing_folder = pao("brief", TOPIC, "--folder", "no-such-folder", "--json")

    assert [status["briefs"] for status in servers().values()] == [3], "the server did not answer the three"
    assert same(warm) == same(cold)
    assert same_json(warm_json) == same_json(cold_json)
    assert missing_folder.returncode == 0 and '"markdown"' in missing_folder.stdout  # the folder is only words here
    written = pao("brief", TOPIC, "--folder", str(isolated_home), "--write")  # writes files: never the server's
    assert written.returncode == 0 and (isolated_home / "CONTEXT_BRIEFING.md").exists(), written.stderr
    assert [status["briefs"] for status in servers().values()] == [3]
    assert f"warm brief: running (pid {server['pid']}, 3 briefs" in pao("doctor").stdout


def test_what_was_added_to_memory_a_moment_ago_is_in_the_next_warm_brief(pao: Pao) -> None:
    pao("brief", TOPIC)
    running_server()
    fact = "The ferry app's crash on old handsets was the zebrafish codec in release 7.4"
    before = pao("brief", TOPIC)
    added = pao("memory", "add", "ferrypass", fact)
    after = pao("brief", TOPIC)

    assert added.returncode == 0, added.stderr
    assert "zebrafish" not in before.stdout and "zebrafish" in after.stdout
    assert same(after) == same(pao("brief", TOPIC, env={warm_brief.ENV: "0"}))
    assert [status["briefs"] for status in servers().values()] == [2]


def test_a_changed_configuration_is_answered_by_its_own_server(pao: Pao, pao_config_file: Path) -> None:
    pao("brief", TOPIC)
    first = running_server()
    pao_config_file.write_text("[briefing]\nmax_items = 1\n")

    changed = pao("brief", TOPIC)  # another key: no server for it yet, briefed in-process

    assert same(changed) == same(pao("brief", TOPIC, env={warm_brief.ENV: "0"}))
    items = [len(json.loads(pao("brief", "--json", TOPIC, env=env).stdout)["items"])
             for env in ({warm_brief.ENV: "0"}, {warm_brief.ENV: "0", "PAO_CONFIG": os.devnull})]
    assert items[0] == 1 < items[1]
    assert gone(first["pid"]), "the server of the old configuration still runs"  # its key no longer holds
    second = running_server()
    assert second["pid"] != first["pid"]
    assert same(pao("brief", TOPIC)) == same(changed)
    assert [status["briefs"] for status in servers().values()] == [1]  # the --json runs went in-process


def test_another_user_gets_no_answer_and_an_impostor_is_not_believed(pao: Pao, runtime: Path) -> None:
    setpriv = shutil.which("setpriv")
    if setpriv is None or os.getuid() != 0:
        pytest.skip("needs root and setpriv to run a process as nobody")
    cold = pao("brief", TOPIC, env={warm_brief.ENV: "0"})
    pao("brief", TOPIC)
    running_server()
    socket_path = next((runtime / "pao").glob("wb-*.sock"))
    asker = ("import socket, sys; s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])\n"
             "try:\n s.sendall(b'{\"protocol\": 1, \"op\": \"status\"}\\n'); d = s.recv(100)\n"
             "except (BrokenPipeError, ConnectionResetError):\n d = b''\n"  # refused before or after it asked
             "print(repr(d) if d else 'closed')")
    for folder in (runtime, runtime / "pao"):  # only so that nobody reaches the socket at all; 0700 again below
        os.chmod(folder, 0o711)
    os.chmod(socket_path, 0o666)
    try:
        nobody = subprocess.run([setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", "-c",
                                 asker, str(socket_path)], capture_output=True, text=True, timeout=30)
    finally:
        for folder in (runtime, runtime / "pao"):
            os.chmod(folder, 0o700)
        os.chmod(socket_path, 0o600)
    assert nobody.stdout.strip() == "closed", nobody.stderr  # connected, and closed without a word
    assert [status["briefs"] for status in servers().values()] == [0]

    impostor_folder = Path(tempfile.mkdtemp(prefix="pao-impostor-", dir=runtime.parent))
    os.chmod(impostor_folder, 0o777)  # nobody's socket is made here, then moved where the user's server listened
    answer = base64.b64encode(b"IMPOSTOR\n").decode()
    impostor = subprocess.Popen(
        [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", "-c",
         "import socket, sys; s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen()\n"
         "print('up', flush=True)\n"
         "while True:\n c, _ = s.accept(); c.recv(65536); c.sendall(sys.argv[2].encode())",
         str(impostor_folder / "s"), f'{{"code": 0, "stdout": "{answer}", "stderr": ""}}\n'],
        stdout=subprocess.PIPE, text=True)
    try:
        assert impostor.stdout is not None and impostor.stdout.readline() == "up\n"
        servers_before = servers()
        warm_brief_stop = [found["pid"] for found in servers_before.values() if found]
        subprocess.run([sys.executable, "-c", "import time; from pao_postgres import warm_brief; "
                        "warm_brief.servers(time.monotonic() + 2, 'stop')"], timeout=30)
        assert all(gone(pid) for pid in warm_brief_stop)
        os.rename(impostor_folder / "s", socket_path)  # nobody's socket where the user's server was

        fooled = pao("brief", TOPIC)
    finally:
        impostor.kill()
        impostor.wait()
    shutil.rmtree(impostor_folder, ignore_errors=True)
    assert "IMPOSTOR" not in fooled.stdout
    assert same(fooled) == same(cold)


def test_a_runtime_folder_that_is_a_link_is_not_used(pao: Pao, runtime: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    (runtime / "pao").symlink_to(elsewhere)
    cold = pao("brief", TOPIC, env={warm_brief.ENV: "0"})

    runs = [pao("brief", TOPIC) for _ in range(2)]
    time.sleep(3)  # a server started by the first would have had time to bind

    assert all(same(run) == same(cold) for run in runs)
    assert list(elsewhere.iterdir()) == [] and servers() == {}
    assert not [line for line in ps() if "warm_brief_server" in line and str(runtime) in environ_of(line)]


def ps() -> list[str]:
    return subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True).stdout.splitlines()


def environ_of(line: str) -> str:
    try:
        return Path(f"/proc/{line.split()[0]}/environ").read_text(errors="replace")
    except OSError:
        return ""


def test_a_killed_or_stuck_server_costs_a_bounded_wait(pao: Pao) -> None:
    cold = pao("brief", TOPIC, env={warm_brief.ENV: "0"})
    pao("brief", TOPIC)
    stuck = running_server()
    os.kill(stuck["pid"], signal.SIGSTOP)  # listening, but never answering
    try:
        started = time.monotonic()
        waited = pao("brief", TOPIC)
        waited_s = time.monotonic() - started
    finally:
        os.kill(stuck["pid"], signal.SIGKILL)
        os.kill(stuck["pid"], signal.SIGCONT)
    assert gone(stuck["pid"])
    assert same(waited) == same(cold)
    assert warm_brief.ANSWER_S <= waited_s < warm_brief.ANSWER_S + 30

    killed = pao("brief", TOPIC)  # its socket file stays: refused at once, briefed in-process, a new server started
    assert same(killed) == same(cold)
    assert running_server()["pid"] != stuck["pid"]


def test_the_variable_and_the_configuration_turn_it_off(pao: Pao, runtime: Path, pao_config_file: Path) -> None:
    for _ in range(2):
        assert pao("brief", TOPIC, env={warm_brief.ENV: "0"}).returncode == 0
    time.sleep(3)
    assert not list((runtime / "pao").glob("wb-*"))

    pao_config_file.write_text("[warm_brief]\nenabled = false\n")
    pao("brief", TOPIC)  # starts a server, which reads the configuration, marks its key off and exits
    until(lambda: list((runtime / "pao").glob("wb-*.off")), bool, 60)
    for _ in range(2):
        assert pao("brief", TOPIC).returncode == 0
    time.sleep(3)
    assert servers() == {}
    assert "warm brief: off ([warm_brief] enabled = false)" in pao("doctor").stdout
    assert "warm brief: off (PAO_WARM_BRIEF=0)" in pao("doctor", env={warm_brief.ENV: "0"}).stdout
    assert not [line for line in ps() if "warm_brief_server" in line and str(runtime) in environ_of(line)]


def test_no_more_servers_start_than_the_cap(pao: Pao, runtime: Path) -> None:
    """Each key has its server (one per environment and configuration): their number is capped per user."""
    import fcntl

    pao("brief", TOPIC, env={warm_brief.ENV: "0"})  # makes the runtime folder
    folder = runtime / "pao"
    folder.mkdir(mode=0o700, exist_ok=True)
    others = [open(folder / f"wb-{index:020x}.lock", "wb") for index in range(warm_brief.MAX_SERVERS)]
    try:
        for held in others:  # as servers of other keys hold theirs
            fcntl.flock(held, fcntl.LOCK_EX)
        assert same(pao("brief", TOPIC)) == same(pao("brief", TOPIC, env={warm_brief.ENV: "0"}))
        until(lambda: started_and_left(folder, {held.name for held in others}), bool, 60)  # the server it started
        assert servers() == {}
    finally:
        for held in others:
            held.close()
    pao("brief", TOPIC)
    assert running_server()["briefs"] == 0  # one fewer: this key's server runs


def started_and_left(folder: Path, others: set[str]) -> bool:
    """Whether a server of this test's key took its lock and let it go (it exited)."""
    import fcntl

    for lock in folder.glob("wb-*.lock"):
        if str(lock) in others:
            continue
        with open(lock, "rb") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
                return True
            except BlockingIOError:
                return False
    return False


def test_an_idle_server_exits_and_so_does_one_whose_files_are_gone(pao: Pao, runtime: Path,
                                                                  pao_config_file: Path) -> None:
    pao_config_file.write_text("[warm_brief]\nidle_s = 10\n")
    pao("brief", TOPIC)
    idle = running_server()
    assert idle["idle_s"] == 10
    assert gone(idle["pid"], timeout=40)
    assert not list((runtime / "pao").glob("wb-*.sock"))

    pao("brief", TOPIC)
    orphan = running_server()
    pao_config_file.unlink()  # as a test's temporary home goes
    assert gone(orphan["pid"], timeout=20)


def test_a_server_whose_code_changed_exits(pao: Pao) -> None:
    """pao upgraded or edited under a running server: it answers no more and exits (the brief runs in-process)."""
    pao("brief", TOPIC)
    server = running_server()
    module = Path(warm_brief.__file__)  # one of the files the server loaded
    status = module.stat()
    os.utime(module, ns=(status.st_atime_ns, status.st_mtime_ns + 1_000_000_000))
    try:
        assert gone(server["pid"], timeout=20)
    finally:
        os.utime(module, ns=(status.st_atime_ns, status.st_mtime_ns))
