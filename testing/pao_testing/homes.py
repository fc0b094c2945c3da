"""Fixtures every pao test shares: an isolated home for pao and the user, and a CLI runner.

A test folder's conftest imports them (``from pao_testing.homes import isolated_home, pao, pao_config_file``):
``isolated_home`` is autouse there, so no test of that folder touches a real user's file.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import selectors
import subprocess
import sys
from pathlib import Path
from typing import Iterator, Mapping

import pytest

from pao_core.plugins import reset_plugins


@pytest.fixture(autouse=True)
def isolated_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own HOME, PAO_HOME and (empty) PAO_CONFIG: no real user file is touched."""
    root = tmp_path_factory.mktemp("home")
    home = root / "user"
    pao_home = root / "pao"
    home.mkdir()
    pao_home.mkdir()
    config = root / "config.toml"
    config.write_text("")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("PAO_HOME", str(pao_home))
    monkeypatch.setenv("PAO_CONFIG", str(config))
    for name in ("PAO_LOAD_PLUGINS", "PAO_DISABLE_PLUGINS", "PAO_POSTGRES_URL", "PAO_HISTORY_URL",
                 "PAO_CLAUDE_COMMAND", "PAO_TMUX_SOCKET", "PAO_CODEX_COMMAND", "PAO_GEMINI_COMMAND",
                 "CODEX_HOME", "GEMINI_CLI_HOME", "GEMINI_API_KEY", "GOOGLE_GEMINI_BASE_URL",
                 "PAO_MEMORY_FILE", "MEMORY_FILE_PATH", "PAO_REGISTRY_URL"):
        monkeypatch.delenv(name, raising=False)
    reset_plugins()
    yield root
    reset_plugins()


@pytest.fixture
def pao_config_file(isolated_home: Path) -> Path:
    """The PAO_CONFIG file of this test (empty until the test writes it)."""
    return isolated_home / "config.toml"


def run_pao(*args: str, env: dict[str, str] | None = None, input: str | None = None,
            timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Run ``pao ARGS`` as a separate process with this test's environment."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "pao_core", *args],
        capture_output=True, text=True, env=full_env, input=input, timeout=timeout,
    )


def run_pao_here(*args: str, env: Mapping[str, str] | None = None,
                 input: str | None = None) -> subprocess.CompletedProcess[str]:
    """``pao ARGS`` in this process: ``main(argv)`` with the plugins installed here (their entry points), and
    ``env`` as the whole environment when given. For a test's set-up and checks where the process is not what the
    test is about (a separate process costs the interpreter's and the plugins' start-up, a second or so for a
    store's first write); keep :func:`run_pao` where the process boundary, its exit or its imports are the point."""
    from pao_core.cli import main  # the CLI and its plugins load when a test first runs pao here

    out, err = io.StringIO(), io.StringIO()
    with _environment(env), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), \
            _stdin(input or ""):
        try:
            code = main(list(args))
        except SystemExit as leaving:  # argparse's --help, --version and usage errors end so
            code = leaving.code if isinstance(leaving.code, int) else int(leaving.code is not None)
    return subprocess.CompletedProcess(["pao", *args], code, out.getvalue(), err.getvalue())


HOLD_OPEN = """\
import contextlib, io, json, sys
from pao_core.cli import main
out, err = io.StringIO(), io.StringIO()
with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
    code = main(sys.argv[1:])
print(json.dumps([code, out.getvalue(), err.getvalue()]), flush=True)
sys.stdin.read()
"""


@contextlib.contextmanager
def pao_held_open(*args: str, timeout: float = 60) -> Iterator[subprocess.CompletedProcess[str]]:
    """``pao ARGS`` in a process of its own that lives on after the command until the block ends. A background
    job waits for the process that started it to end (:mod:`pao_embeddings.later`): the block sees what the
    command did before the job runs, and the job starts as the block ends (run in this process, it would wait
    its longest for pytest)."""
    process = subprocess.Popen([sys.executable, "-c", HOLD_OPEN, *args], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, text=True)
    assert process.stdin is not None and process.stdout is not None
    try:
        line = _read_line(process, timeout)
        code, out, err = json.loads(line) if line else (process.wait(timeout), "", "(the process ended early)")
        yield subprocess.CompletedProcess(["pao", *args], code, out, err)
    finally:
        process.stdin.close()
        try:
            process.wait(timeout)
        finally:
            process.kill()
            process.stdout.close()


def _read_line(process: subprocess.Popen[str], timeout: float) -> str:
    """The process's first line of output, or a failure after ``timeout``."""
    assert process.stdout is not None
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        assert selector.select(timeout), f"no answer within {timeout:g} s from {process.args}"
    return process.stdout.readline()


@contextlib.contextmanager
def _environment(env: Mapping[str, str] | None) -> Iterator[None]:
    """``env`` as ``os.environ`` meanwhile, and plugins loaded for it (``PAO_LOAD_PLUGINS``...) and not kept."""
    if env is None:
        yield
        return
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    reset_plugins()
    try:
        yield
    finally:
        reset_plugins()
        os.environ.clear()
        os.environ.update(saved)


@contextlib.contextmanager
def _stdin(text: str) -> Iterator[None]:
    saved = sys.stdin
    sys.stdin = io.StringIO(text)
    try:
        yield
    finally:
        sys.stdin = saved


@pytest.fixture
def pao():
    """``pao(*args, env=...)`` runs the CLI in a subprocess and returns the CompletedProcess."""
    return run_pao
