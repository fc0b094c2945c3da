"""Fixtures for lifecycle tests: private PAO_HOME/HOME, a private tmux server, the fake host.

Import the fixtures into a test module (``from pao_testing.lifecycle.fixtures import ...``).
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Iterator

import attrs
import pytest

from pao_testing.lifecycle.fake_host import FakeHostPlugin
from pao_core.cli import main
from pao_core.plugins import get_plugins, reset_plugins

RUN_PAO = str(Path(__file__).with_name("run_pao.py"))


@attrs.define
class Pao:
    """Runs ``pao`` in this process (fake host registered) or as a subprocess."""

    home: Path
    socket: str
    workdir: Path
    capsys: pytest.CaptureFixture[str]
    plugin: FakeHostPlugin

    def __call__(self, *args: str) -> tuple[int, str, str]:
        self.capsys.readouterr()
        code = main(list(args))
        out, err = self.capsys.readouterr()
        return code, out, err

    def subprocess(self, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, RUN_PAO, *args],
            cwd=self.workdir,
            env={**os.environ, **(env or {})},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def folder(self, name: str) -> Path:
        path = self.workdir / name
        path.mkdir(parents=True, exist_ok=True)
        return path

    def tmux(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["tmux", "-L", self.socket, *args], capture_output=True, text=True, check=False)


@pytest.fixture
def pao(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Iterator[Pao]:
    socket = f"pao-test-{os.getpid()}-{uuid.uuid4().hex[:6]}"
    home, workdir = tmp_path / "pao-home", tmp_path / "work"
    (tmp_path / "user-home").mkdir()
    workdir.mkdir()
    monkeypatch.setenv("PAO_HOME", str(home))
    monkeypatch.setenv("HOME", str(tmp_path / "user-home"))
    monkeypatch.setenv("PAO_TMUX_SOCKET", socket)
    monkeypatch.setenv("PAO_LOAD_PLUGINS", "pao-agents,pao-tmux,pao-hosts,pao-monitor")
    monkeypatch.setenv("PAO_CONFIG", str(tmp_path / "config.toml"))
    (tmp_path / "config.toml").write_text("[spawn]\nhost = \"fake\"\nready_timeout = 15.0\n")
    monkeypatch.chdir(workdir)
    for key in [k for k in os.environ if k.startswith("FAKE_AGENT_")]:
        monkeypatch.delenv(key)
    reset_plugins()
    plugin = FakeHostPlugin()
    get_plugins().manager.register(plugin, name="fake-host")
    runner = Pao(home, socket, workdir, capsys, plugin)
    try:
        yield runner
    finally:
        get_plugins().manager.unregister(plugin)
        reset_plugins()
        runner.tmux("kill-server")
