"""The tmux driver against real tmux on a private socket (one per test)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path
from typing import Callable, Iterator

import pytest

from pao_core.errors import PaoError, ValidationError
from pao_tmux.driver import TmuxDriver, TmuxError, TmuxOptions

# A terminal program that turns on bracketed paste and records the raw bytes it reads.
RECORDER = textwrap.dedent(
    """
    import os, sys, termios, tty
    out = sys.argv[1]
    tty.setraw(0)
    sys.stdout.write("\\x1b[?2004hrecorder ready\\r\\n"); sys.stdout.flush()
    data = b""
    while not data.endswith(b"\\r"):
        data += os.read(0, 65536)
        with open(out, "wb") as handle:
            handle.write(data)
    """
)


def _eventually(check: Callable[[], bool], timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.02)
    return check()


@pytest.fixture
def driver() -> Iterator[TmuxDriver]:
    socket = f"pao-test-{os.getpid()}-{uuid.uuid4().hex[:6]}"
    tmux = TmuxDriver(TmuxOptions(socket=socket, session="agents", width=120, height=30))
    try:
        yield tmux
    finally:
        subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True, check=False)


def _tmux(driver: TmuxDriver, *args: str) -> str:
    return subprocess.run(["tmux", "-L", driver.options.socket, *args], capture_output=True, text=True).stdout


def test_available_here(driver: TmuxDriver) -> None:
    assert driver.availability() is None
    assert "must match" in TmuxDriver(TmuxOptions(socket="bad socket")).availability()


def test_window_per_agent_with_folder_and_exact_environment(driver: TmuxDriver, tmp_path: Path, private_tmp: Path) -> None:
    # a server started earlier, by a process with another environment
    subprocess.run(
        ["tmux", "-L", driver.options.socket, "new-session", "-d", "-s", "other", "sleep", "60"],
        env={**os.environ, "STALE_VAR": "from-the-old-server"},
        check=True,
    )
    out = tmp_path / "env.json"
    program = "import json, os, sys; json.dump({'cwd': os.getcwd(), 'env': dict(os.environ)}, open(sys.argv[1], 'w'))"
    env = {"PATH": os.environ["PATH"], "PAO_MARK": "x; y $HOME `z`", "TERM": "dumb"}
    target = driver.spawn("agent-1", str(tmp_path), [sys.executable, "-c", program, str(out)], env)
    assert target.startswith(driver.options.socket + ":%")
    assert _eventually(out.exists)
    time.sleep(0.1)
    seen = json.loads(out.read_text())
    assert seen["cwd"] == str(tmp_path)
    assert seen["env"]["PAO_MARK"] == "x; y $HOME `z`"
    assert "STALE_VAR" not in seen["env"]
    assert seen["env"]["TERM"] != "dumb" and seen["env"]["TMUX_PANE"] == target.split(":")[1]
    windows = _tmux(driver, "list-windows", "-t", "=agents", "-F", "#{window_name}").split()
    assert windows == ["agent-1"]
    assert list(private_tmp.iterdir()) == []  # the launcher deleted its spec file


def test_paste_is_bracketed_and_verbatim_press_sends_a_key(driver: TmuxDriver, tmp_path: Path, private_tmp: Path) -> None:
    out = tmp_path / "bytes"
    target = driver.spawn("rec", str(tmp_path), [sys.executable, "-c", RECORDER, str(out)], dict(os.environ))
    assert _eventually(lambda: "recorder ready" in driver.read(target))
    hostile = "a; kill-server \\; Enter C-c $(id) `x` 'q' \"dq\" #{pane_id} ~ ünï"
    driver.paste(target, hostile)
    driver.press(target, "Enter")
    assert _eventually(lambda: out.exists() and out.read_bytes().endswith(b"\r"))
    assert out.read_bytes() == b"\x1b[200~" + hostile.encode() + b"\x1b[201~\r"
    assert _tmux(driver, "list-buffers") == ""  # the paste buffer was deleted
    assert list(private_tmp.iterdir()) == []  # no spec or paste file left behind


def test_a_paste_and_its_key_do_not_load_libtmux(driver: TmuxDriver, tmp_path: Path) -> None:
    """A spawn's task is pasted the moment its CLI may take it: libtmux's import (40-90 ms) is not on that way."""
    out = tmp_path / "bytes"
    probe = textwrap.dedent(
        f"""
        import sys, time
        from pao_tmux.driver import TmuxDriver, TmuxOptions
        driver = TmuxDriver(TmuxOptions(socket={driver.options.socket!r}, session="agents"))
        target = driver.spawn("rec", {str(tmp_path)!r}, [sys.executable, "-c", {RECORDER!r}, {str(out)!r}], {{}})
        while "recorder ready" not in driver.read(target):
            time.sleep(0.02)
        driver.paste(target, "the task")
        driver.press(target, "Enter")
        print("libtmux" in sys.modules)
        """
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=30)
    assert (done.returncode, done.stdout.strip()) == (0, "False"), done.stderr
    assert _eventually(lambda: out.exists() and out.read_bytes() == b"\x1b[200~the task\x1b[201~\r")


def test_a_spawn_tmux_refuses_leaves_no_launch_file(
    tmp_path: Path, private_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    not_a_folder = tmp_path / "file"
    not_a_folder.write_text("")
    monkeypatch.setenv("TMUX_TMPDIR", str(not_a_folder))  # tmux cannot make its socket there
    driver = TmuxDriver(TmuxOptions(socket=f"pao-test-{os.getpid()}-nowhere"))
    with pytest.raises(TmuxError, match="^cannot start window 'agent'"):
        driver.spawn("agent", str(tmp_path), ["sleep", "30"], {"ANTHROPIC_API_KEY": "sk-ant-secret"})
    assert list(private_tmp.iterdir()) == []


def test_read_alive_pid_and_dead_panes(driver: TmuxDriver, tmp_path: Path) -> None:
    live = driver.spawn("live", str(tmp_path), ["sh", "-c", "echo hello-from-live; sleep 30"], dict(os.environ))
    assert _eventually(lambda: "hello-from-live" in driver.read(live))
    assert driver.is_alive(live)
    pid = driver.pid(live)
    assert pid and Path(f"/proc/{pid}").exists()
    dying = driver.spawn("dying", str(tmp_path), ["sh", "-c", "echo last words here; exit 3"], dict(os.environ))
    assert _eventually(lambda: not driver.is_alive(dying))
    assert "last words here" in driver.read(dying)  # kept after exit (remain-on-exit)
    missing = driver.spawn("missing", str(tmp_path), ["no-such-program-pao"], dict(os.environ))
    assert _eventually(lambda: not driver.is_alive(missing))
    assert "pao: cannot start no-such-program-pao: No such file or directory" in driver.read(missing)


def test_kill_and_dead_server(driver: TmuxDriver, tmp_path: Path) -> None:
    first = driver.spawn("first", str(tmp_path), ["sleep", "30"], dict(os.environ))
    second = driver.spawn("second", str(tmp_path), ["sleep", "30"], dict(os.environ))
    driver.kill(first)
    driver.kill(first)  # already gone: not an error
    assert not driver.is_alive(first) and driver.is_alive(second)
    assert _tmux(driver, "list-windows", "-a", "-F", "#{window_name}").split() == ["second"]
    subprocess.run(["tmux", "-L", driver.options.socket, "kill-server"], check=True)
    assert not driver.is_alive(second) and driver.pid(second) is None
    driver.kill(second)
    with pytest.raises(TmuxError) as error:
        driver.paste(second, "hello")
    assert str(error.value) == f"cannot load the paste buffer: the tmux server {driver.options.socket!r} is not running"
    with pytest.raises(TmuxError, match="is not running"):
        driver.read(second)


def test_kill_ends_a_process_tree_that_ignores_hangup(driver: TmuxDriver, tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    stubborn = (
        "import os, signal, sys, time\n"
        "signal.signal(signal.SIGHUP, signal.SIG_IGN)\n"
        "child = os.fork()\n"
        "if child == 0:\n"
        "    signal.signal(signal.SIGHUP, signal.SIG_IGN); time.sleep(60); sys.exit()\n"
        f"open({str(pids)!r}, 'w').write(f'{{os.getpid()}} {{child}}')\n"
        "print('stubborn ready', flush=True); time.sleep(60)\n"
    )
    target = driver.spawn("stubborn", str(tmp_path), [sys.executable, "-c", stubborn], dict(os.environ))
    assert _eventually(lambda: "stubborn ready" in driver.read(target))
    parent, child = (int(pid) for pid in pids.read_text().split())
    driver.kill(target)
    for pid in (parent, child):
        assert _eventually(lambda pid=pid: not _running(pid)), f"process {pid} survived pao kill"


def test_kill_returns_once_the_tree_has_ended_not_after_its_grace(tmp_path: Path) -> None:
    """Ended processes stay zombies until their parent (tmux, init) reaps them: that is ended, not a reason to
    wait out the grace (each kill cost 3-5.6 s); a process that ignores SIGTERM still gets SIGKILL after it."""
    socket = f"pao-test-{os.getpid()}-{uuid.uuid4().hex[:6]}"
    driver = TmuxDriver(TmuxOptions(socket=socket, kill_grace=3.0))
    try:
        tree = driver.spawn("tree", str(tmp_path), ["sh", "-c", "sleep 60 & sleep 60 & exec sleep 60"], dict(os.environ))
        stubborn = driver.spawn("stubborn", str(tmp_path), [sys.executable, "-c", "import signal, time; "
                                "signal.signal(signal.SIGTERM, signal.SIG_IGN); print('deaf', flush=True); time.sleep(60)"],
                                dict(os.environ))
        assert _eventually(lambda: "deaf" in driver.read(stubborn))
        import psutil

        assert _eventually(lambda: driver.pid(tree) is not None and len(psutil.Process(driver.pid(tree)).children()) == 2)
        deaf_pid = driver.pid(stubborn)
        started = time.monotonic()
        driver.kill(tree)
        assert time.monotonic() - started < 1.0
        started = time.monotonic()
        driver.kill(stubborn)
        assert 3.0 <= time.monotonic() - started < 5.0 and not _running(deaf_pid)
        assert _tmux(driver, "list-windows", "-a", "-F", "#{window_name}").split() == []
    finally:
        subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True, check=False)


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def test_bad_keys_and_targets_are_refused(driver: TmuxDriver) -> None:
    for key in ("hello world", "a;b", "Enter;kill-server", "", "x" * 40):
        with pytest.raises(ValidationError, match="is not a tmux key name"):
            driver.press(f"{driver.options.socket}:%0", key)
    for target in ("%0", "pao:0", "pao:%0;kill-server", "a b:%1", ":%1"):
        with pytest.raises(ValidationError, match="is not a tmux target"):
            driver.read(target)
    with pytest.raises(PaoError, match="command is empty"):
        driver.spawn("x", "/", [], {})


def test_plugin_is_listed_and_light(tmp_path: Path) -> None:
    env = {**os.environ, "PAO_HOME": str(tmp_path), "PAO_LOAD_PLUGINS": "pao-tmux,pao-agents",
           "PAO_TMUX_SOCKET": "pao-test-list"}  # pao-agents reports the drivers' availability
    command = "import sys, pao_core.cli as cli; sys.exit(cli.main(['plugins', '--json']))"
    listing = subprocess.run([sys.executable, "-c", command], env=env, capture_output=True, check=True)
    report = json.loads(listing.stdout)
    tmux = [row for row in report["plugins"] if row["name"] == "tmux"]
    assert tmux and tmux[0]["distribution"] == "pao-tmux"
    assert tmux[0]["terminal_drivers"] == [{"name": "tmux", "available": True, "reason": None}]
    probe = "import sys, pao_tmux.hooks, pao_core; print('libtmux' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True).stdout.strip() == "False"


def test_spawning_right_after_the_last_window_closed(driver: TmuxDriver, tmp_path: Path) -> None:
    """Closing the last window ends session and server in the background; spawn must not trip on it."""
    for round_number in range(10):
        target = driver.spawn(f"w{round_number}", str(tmp_path), ["sleep", "30"], dict(os.environ))
        assert driver.is_alive(target)
        driver.kill(target)
