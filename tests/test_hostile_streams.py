"""Hostile standard streams and arguments: one clear line and an exit code, never a traceback.

Each case runs ``pao`` as a real subprocess: a terminal that cannot encode the topic
(``PYTHONIOENCODING=ascii``), an argument that is not UTF-8 (surrogateescape), a closed
stdout, a closed stderr, a closed stdin, and a stdout pipe whose reader has gone. A closed
stdout is an error (exit 1, as for ``ls >&-``); a reader that went away ends pao quietly
with 141, as ``cat`` ends on SIGPIPE.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

CLOSED = "pao: cannot write the output: standard output is closed\n"


def pao_process(*args: str | bytes, env: dict[str, str] | None = None, close: tuple[int, ...] = (),
                stdout: int = subprocess.PIPE) -> subprocess.CompletedProcess[bytes]:
    """``python -m pao_core ARGS`` with the descriptors in ``close`` closed before it starts."""
    return subprocess.run([sys.executable.encode(), b"-m", b"pao_core", *(a.encode() if isinstance(a, str) else a for a in args)],
                          env={**os.environ, **(env or {})}, stdout=stdout, stderr=subprocess.PIPE,
                          preexec_fn=(lambda: [os.close(fd) for fd in close]) if close else None,  # noqa: PLW1509
                          timeout=60, check=False)


def no_traceback(result: subprocess.CompletedProcess[bytes]) -> str:
    err = result.stderr.decode("utf-8", "replace")
    assert "Traceback" not in err and "Exception ignored" not in err, err
    return err


@pytest.mark.parametrize("extra", [[], ["--json"]])
def test_a_topic_the_terminal_cannot_encode_is_replaced_not_a_traceback(isolated_home: Path, extra: list[str]) -> None:
    result = pao_process("brief", "café au lait", *extra, env={"PYTHONIOENCODING": "ascii"})
    no_traceback(result)
    assert result.returncode == 0
    out = result.stdout.decode("ascii")  # every byte is ASCII
    assert ("caf\\u00e9 au lait" if extra else "caf? au lait") in out


def test_spawn_and_list_with_a_topic_the_terminal_cannot_encode(isolated_home: Path) -> None:
    spawned = pao_process("spawn", "café au lait", "--host", "nosuch", env={"PYTHONIOENCODING": "ascii"})
    err = no_traceback(spawned)
    assert spawned.returncode != 0 and err.startswith("pao: ") and err.count("\n") == 1, err
    listed = pao_process("list", env={"PYTHONIOENCODING": "ascii"})
    no_traceback(listed)
    assert listed.returncode == 0 and b"NAME" in listed.stdout


def test_an_argument_that_is_not_utf8_is_shown_as_a_replacement_character(isolated_home: Path) -> None:
    result = pao_process("brief", b"caf\xff")
    no_traceback(result)
    assert result.returncode == 0
    assert "caf\ufffd" in result.stdout.decode("utf-8")
    spawned = pao_process("spawn", b"caf\xff", "--host", "nosuch")
    err = no_traceback(spawned)
    assert spawned.returncode != 0 and err.startswith("pao: ") and err.count("\n") == 1, err


@pytest.mark.parametrize("args", [["list"], ["brief", "x"], ["--help"], ["--version"], ["brief", "x", "--json"]])
def test_a_closed_stdout_is_one_line_on_stderr_and_exit_1(isolated_home: Path, args: list[str]) -> None:
    result = pao_process(*args, close=(1,), stdout=subprocess.DEVNULL)
    assert no_traceback(result) == CLOSED
    assert result.returncode == 1


def test_closed_stdout_and_stderr_exit_1_and_write_into_no_file_pao_opens(isolated_home: Path) -> None:
    result = pao_process("brief", "x", close=(1, 2), stdout=subprocess.DEVNULL)
    assert result.returncode == 1
    home = Path(os.environ["PAO_HOME"])
    for path in (p for p in home.rglob("*") if p.is_file()):  # descriptors 1 and 2 went to the null device
        assert b"standard output is closed" not in path.read_bytes() and b"# Context briefing" not in path.read_bytes()


def test_a_closed_stdin_reads_as_empty(isolated_home: Path) -> None:
    result = pao_process("brief", "x", close=(0,))
    no_traceback(result)
    assert result.returncode == 0 and b"# Context briefing: x" in result.stdout


@pytest.mark.parametrize("unbuffered", ["", "1"], ids=["buffered", "unbuffered"])
@pytest.mark.parametrize("args", [["brief", "x"], ["--help"], ["--version"], ["list"]])
def test_a_reader_that_went_away_ends_pao_quietly_with_141(isolated_home: Path, args: list[str], unbuffered: str) -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)  # `pao ... | head -c0` once head has exited
    try:  # buffered, the failure shows when the output is flushed at the end; unbuffered, at the first write
        result = pao_process(*args, stdout=write_end, env={"PYTHONUNBUFFERED": unbuffered})
    finally:
        os.close(write_end)
    err = no_traceback(result)  # a store's note may be there (brief), no word of the pipe
    assert "pipe" not in err.lower() and "Errno" not in err, err
    assert result.returncode == 141
