"""Two machines on one box: this test's pao (local) and a second account reached over a loopback sshd.

``box`` (no agent CLI) is enough for the transport, validation and routing faults;
``claude_box`` adds the pinned Claude Code CLI on the remote side, pointed at this
test's loopback Messages stub, for the end-to-end tests.
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

from pao_testing.anthropic_stub import AnthropicStub
from pao_testing.claude_cli import REPO_ROOT, cli_environment, cli_path, pinned_versions, seed_home
from pao_testing.sshd import LoopbackSshd, RemoteRuntime, remote_runtime

RUN_PAO = str(REPO_ROOT / "tests" / "hosts_support" / "pao_with_notes.py")
"""The local pao, with the pao-notes example backend reading ``$HOME/notes.md``."""


@attrs.define
class Box:
    """The remote machine (``sshd``, its account, its runtime) and this test's local pao."""

    sshd: LoopbackSshd
    runtime: RemoteRuntime
    local: Path
    name: str = "box"
    deadline: float = 20.0

    @property
    def local_env(self) -> dict[str, str]:
        return {**os.environ, "HOME": str(self.local / "home"), "PAO_HOME": str(self.local / "pao"),
                "PAO_CONFIG": str(self.local / "config.toml")}

    def write_config(self, deadline: float | None = None, extra: str = "") -> None:
        pao = " ".join(self.runtime.pao)
        (self.local / "config.toml").write_text(
            f'[machines.{self.name}]\nhost = "127.0.0.1"\nport = {self.sshd.port}\nuser = "{self.sshd.user}"\n'
            f'pao = "{pao}"\nssh_config = "{self.sshd.ssh_config}"\ndeadline = {deadline or self.deadline}\n{extra}'
        )

    def pao(self, *args: str, check: bool = True, timeout: float = 240) -> subprocess.CompletedProcess[str]:
        """Run the local ``pao ARGS``."""
        done = subprocess.run([sys.executable, RUN_PAO, *args], env=self.local_env, capture_output=True, text=True,
                              timeout=timeout, stdin=subprocess.DEVNULL)
        assert not check or done.returncode == 0, done.stderr
        return done

    def remote_pao(self, *args: str) -> subprocess.CompletedProcess[str]:
        """Run ``pao ARGS`` directly as the remote user (to look at that machine's own state)."""
        return self.sshd.run_remote([*self.runtime.pao, *args])

    def remote_folder(self, name: str) -> Path:
        folder = self.sshd.home / name
        folder.mkdir()
        self.sshd.give(folder)
        return folder


def _box(tmp_path: Path, claude: Path | None, environment: dict[str, str]) -> Iterator[Box]:
    server = LoopbackSshd.start()
    try:
        runtime = remote_runtime(server, claude)
        socket = f"pao-remote-{uuid.uuid4().hex[:8]}"
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8", "PAO_TMUX_SOCKET": socket,
               **environment}
        if runtime.claude is not None:
            env["PAO_CLAUDE_COMMAND"] = str(runtime.claude)
        server.set_environment(env)
        local = tmp_path / "local"
        (local / "home").mkdir(parents=True)
        box = Box(server, runtime, local)
        box.write_config()
        yield box
    finally:
        server.close()


@pytest.fixture
def box(tmp_path: Path) -> Iterator[Box]:
    yield from _box(tmp_path, None, {})


@pytest.fixture
def claude_box(tmp_path: Path, isolated_network: None, anthropic_stub: AnthropicStub) -> Iterator[Box]:
    versions = pinned_versions()
    if not versions:
        pytest.fail("no Claude Code version pinned (scripts/pins.sh)", pytrace=False)
    claude = cli_path(versions[0])
    variables = cli_environment(Path("/nonexistent"), anthropic_stub.url)
    environment = {key: value for key, value in variables.items() if key not in ("PATH", "HOME")}
    for made in _box(tmp_path, claude, environment):
        seed_home(made.sshd.home)
        made.sshd.give(made.sshd.home / ".claude.json")
        yield made
