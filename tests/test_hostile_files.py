"""Files planted where pao reads or creates them (issue 28, items 4 and 6).

A link at each path pao creates (a lock, the background job's log, the warm searcher's
files, the ssh control folder) is refused, never followed: its target stays untouched and
the command fails with one line or goes on safely. ``pao memory import`` and ``export``
read and write regular files only: a FIFO, device or socket is refused at once, never waited on.
"""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from pao_core.errors import PaoError
from pao_core.files import NotRegularFile, SymlinkRefused, lock_is_held, state_lock, take_lock

PAO = str(Path(sys.executable).with_name("pao"))
PRECIOUS = "the user's file: must never be truncated or replaced\n"


def _pao(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PAO, *args], capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)


def _one_line(done: subprocess.CompletedProcess[str]) -> str:
    lines = done.stderr.strip().splitlines()
    assert done.returncode != 0 and len(lines) == 1 and lines[0].startswith("pao: "), done.stderr
    assert "Traceback" not in done.stderr
    return lines[0]


@pytest.fixture
def precious(tmp_path: Path) -> Path:
    target = tmp_path / "precious.txt"
    target.write_text(PRECIOUS)
    target.chmod(0o644)
    return target


def _untouched(target: Path) -> None:
    assert target.read_text() == PRECIOUS and stat.S_IMODE(target.stat().st_mode) == 0o644


def _fifo(tmp_path: Path) -> Path:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    return fifo


# -- locks ----------------------------------------------------------------------------------


def test_a_lock_path_that_is_a_link_is_refused_and_its_target_untouched(tmp_path: Path, precious: Path) -> None:
    lock = tmp_path / "state.lock"
    lock.symlink_to(precious)
    with pytest.raises(SymlinkRefused, match="symbolic link"):
        with state_lock(lock, timeout=0.1):
            pass
    _untouched(precious)
    with pytest.raises(SymlinkRefused):
        lock_is_held(lock)
    _untouched(precious)


def test_a_lock_path_that_is_a_fifo_is_refused_at_once(tmp_path: Path) -> None:
    with pytest.raises(NotRegularFile, match="not a regular file"):
        take_lock(_fifo(tmp_path), timeout=0.1)


def test_the_lock_keeps_its_semantics(tmp_path: Path) -> None:
    lock = tmp_path / "locks" / "x.lock"
    lock.parent.mkdir()
    with state_lock(lock):
        assert stat.S_IMODE(lock.stat().st_mode) == 0o600 and lock_is_held(lock)
        held = subprocess.run([sys.executable, "-c", "import sys; from pao_core.files import state_lock\n"
                               f"with state_lock({str(lock)!r}, timeout=0.2): sys.exit(0)"],
                              capture_output=True, text=True, timeout=30)
        assert held.returncode == 1 and "held by another pao process" in held.stderr
    assert not lock_is_held(lock)
    # a handed-over fd keeps it held in the child after this process closed its copy
    fd = take_lock(lock, timeout=1)
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE,
                             pass_fds=(fd,))
    os.close(fd)
    try:
        assert lock_is_held(lock)
    finally:
        child.communicate(b"")
    assert not lock_is_held(lock)


# -- the background job's files -------------------------------------------------------------


@pytest.mark.parametrize("part", ["lock", "log"])
def test_a_link_at_the_background_job_s_files_starts_nothing_and_touches_nothing(
        isolated_home: Path, precious: Path, part: str) -> None:
    from pao_embeddings.later import embed_later, folder, last_job

    home = Path(os.environ["PAO_HOME"])
    where = folder(home)
    where.mkdir(parents=True, mode=0o700)
    (where / f"longterm.{part}").symlink_to(precious)
    assert embed_later("longterm", ["memory", "sync"], home) is False
    _untouched(precious)
    said = last_job("longterm", home)
    assert said is not None and "symbolic link" in said
    _untouched(precious)


# -- the warm searcher's files --------------------------------------------------------------


def test_a_link_at_the_warm_searcher_s_lock_starts_none_and_touches_nothing(isolated_home: Path, precious: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from pao_postgres.searcher import warm
    from pao_postgres.options import LongtermOptions

    monkeypatch.setenv("XDG_RUNTIME_DIR", str(isolated_home / "run"))
    (isolated_home / "run").mkdir(mode=0o700)
    options = LongtermOptions(url="postgresql://nobody@127.0.0.1:1/none")
    home = Path(os.environ["PAO_HOME"])
    folder = warm.private_dir()
    assert folder is not None
    files = warm.paths(folder, warm.store_key(options, home, "longterm"))
    files["lock"].symlink_to(precious)
    assert warm.start(options, home, "longterm") is False
    _untouched(precious)
    files["lock"].unlink()
    files["slow"].symlink_to(precious)
    warm._touch(files["slow"])
    _untouched(precious)


# -- the ssh control folder -----------------------------------------------------------------


def test_a_link_planted_at_the_ssh_control_folder_in_the_temporary_folder_is_refused(tmp_path: Path) -> None:
    from pao_machines.ssh import Ssh

    home = tmp_path / ("deep-" * 20) / "pao"  # too long for a socket: the folder goes to the temporary folder
    ssh = Ssh(home, environ={})
    folder = ssh.control_dir()
    folder.rmdir()
    decoy = Path(tempfile.mkdtemp())  # private and ours: only the link itself is wrong
    try:
        folder.symlink_to(decoy)
        with pytest.raises(PaoError, match="not a link"):
            ssh.control_dir()
        assert not list(decoy.iterdir())
    finally:
        folder.unlink()
        decoy.rmdir()


# -- import and export: regular files only --------------------------------------------------


def test_import_of_a_fifo_a_device_or_a_socket_is_refused_at_once(isolated_home: Path, tmp_path: Path) -> None:
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(tmp_path / "sock"))
    try:
        for path in (_fifo(tmp_path), Path("/dev/zero"), tmp_path / "sock"):
            line = _one_line(_pao("memory", "import", str(path), timeout=20))
            assert "not a regular file" in line
    finally:
        listener.close()


def test_export_never_replaces_a_fifo_a_device_or_a_socket(isolated_home: Path, tmp_path: Path) -> None:
    assert _pao("memory", "add", "billing", "keeps sessions in valkey").returncode == 0
    targets = [_fifo(tmp_path)]
    if os.geteuid() == 0:  # a device node of our own, as root: never the system's /dev/null
        os.mknod(tmp_path / "null", stat.S_IFCHR | 0o666, os.makedev(1, 3))
        targets.append(tmp_path / "null")
    for target in targets:
        before = os.lstat(target)
        line = _one_line(_pao("memory", "export", str(target), "--force", timeout=20))
        assert "not a regular file" in line
        after = os.lstat(target)
        assert (after.st_ino, after.st_mode) == (before.st_ino, before.st_mode)


def test_import_refuses_an_observation_over_the_limit_and_json_nested_too_deep(isolated_home: Path,
                                                                               tmp_path: Path) -> None:
    from pao_postgres.items import MAX_OBSERVATION_CHARS

    big, deep = tmp_path / "big.jsonl", tmp_path / "deep.jsonl"
    big.write_text(json.dumps({"type": "entity", "name": "a", "observations": ["x" * (MAX_OBSERVATION_CHARS + 1)]}))
    deep.write_text('{"type": "entity", "name": "a", "observations": ' + "[" * 100_000 + "]" * 100_000 + "}\n")
    assert "over the limit of 16,384 (MAX_OBSERVATION_CHARS)" in _one_line(_pao("memory", "import", str(big)))
    assert "big.jsonl:1:" in _one_line(_pao("memory", "import", str(big)))
    assert "deep.jsonl:1: not valid JSON: nested deeper than 64 levels" in _one_line(_pao("memory", "import", str(deep)))
    assert "MAX_OBSERVATION_CHARS" in _one_line(_pao("memory", "add", "a", "y" * (MAX_OBSERVATION_CHARS + 1)))
    stats = json.loads(_pao("memory", "stats", "--json").stdout)
    assert stats["observations"] == 0  # nothing half-imported


# -- other readers of JSON from outside: the same depth bound ---------------------------------


def test_a_transcript_line_or_an_event_nested_too_deep_is_a_malformed_line(tmp_path: Path) -> None:
    from pao_agents.agentdir import read_events
    from pao_historyworker.transcripts import read_exchanges

    deep = '{"type": "user", "uuid": "u1", "message": ' + "[" * 100_000 + "]" * 100_000 + "}\n"
    transcript = tmp_path / "session.jsonl"
    transcript.write_text(deep + json.dumps({"type": "user", "uuid": "u2", "sessionId": "s",
                                             "message": {"role": "user", "content": "why is the export slow"}}) + "\n")
    read = read_exchanges(transcript)
    assert read.malformed == 1 and read.lines == 2 and [e.prompt for e in read.exchanges] == ["why is the export slow"]
    events = tmp_path / "events.jsonl"
    events.write_text('{"event": ' + "[" * 100_000 + "]" * 100_000 + ', "at": 1}\n'
                      '{"event": {"hook_event_name": "Stop"}, "at": 2}\n')
    assert [event["name"] for event in read_events(events)] == ["Stop"]


# -- a state folder that is not pao's own ---------------------------------------------------


@pytest.mark.parametrize("where", ["home", "above home"])
def test_pao_never_makes_the_home_folder_or_one_above_it_private(tmp_path: Path, where: str) -> None:
    """PAO_HOME pointing at the user's home (or the root, or any folder above home) is refused in one line: pao
    would otherwise tighten it to 0700 and lock every other program (and user) out of it."""
    home = tmp_path / "user"
    home.mkdir(mode=0o755)
    state = home if where == "home" else tmp_path
    os.chmod(tmp_path, 0o755)
    run = subprocess.run([PAO, "memory", "add", "project", "a note"], capture_output=True, text=True, timeout=60,
                         env={"PATH": os.environ["PATH"], "HOME": str(home), "PAO_HOME": str(state)})
    assert run.returncode != 0 and "Traceback" not in run.stderr
    assert run.stderr.strip().count("\n") == 0 and "cannot be pao's private folder" in run.stderr
    assert stat.S_IMODE(os.stat(state).st_mode) == 0o755
