"""Two machines on one box for tests and benches: this run's pao, and an account behind a loopback sshd.

Usage::

    with two_machines(tmp_path, claude_cli_path, {"ANTHROPIC_BASE_URL": stub.url, ...}) as box:
        box.pao("spawn", "fix it", "--on", "box", "--folder", "~/proj")   # the local pao
        box.remote_pao("list", "--json")                                   # that machine's pao, directly
        box.sshd.stop(); box.sshd.restart()                                # the machine going away

The remote user must be able to run pao and the agent CLI. When it cannot read them in
place (a clone under ``/root``, mode 0700; a Python under ``/root/.pyenv``),
:func:`remote_runtime` gives it a virtual environment on a Python of this version it can
run, seeing this environment's packages or holding copies of them, and a copy of the CLI.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import uuid
from pathlib import Path
from typing import Callable, Iterator, Mapping

import attrs

from pao_testing.claude_cli import REPO_ROOT
from pao_testing.sshd import LoopbackSshd, SshdError

REMOTE_PACKAGES = ("pao_core", "pao_tmux", "pao_machines", "pao_testing")
"""What the remote user's Python must import (the rest comes with the environment)."""


# -- what the remote user runs ------------------------------------------------------


@attrs.frozen
class RemoteRuntime:
    """How the remote user runs pao and the agent CLI: commands readable by that account."""

    python: str
    claude: Path | None

    @property
    def pao(self) -> tuple[str, ...]:
        return (self.python, "-m", "pao_core")


_copies: dict[str, Path] = {}
"""Copies made in this process (checkout not readable by the remote user), reused by later fixtures."""


def remote_runtime(server: LoopbackSshd, claude: Path | None) -> RemoteRuntime:
    """This environment's pao and ``claude`` as the remote user can run them.

    In place when that account can run them; else a virtual environment of its own on a
    Python of this version it can run, seeing this one's packages, or (when the checkout
    is not readable, say under ``/root``, 0700) holding a copy of them; the CLI likewise.
    ``PAO_TEST_COPY_RUNTIME=1`` forces the copies (to test that path).
    """
    force = os.environ.get("PAO_TEST_COPY_RUNTIME") == "1"
    python = sys.executable
    if force or not _imports(server, python):
        base = _base_python(server)
        python = str(_copy_once(f"venv:{base}", lambda root: _runtime_venv(root, base, copy=False)))
        if force or not _imports(server, python):
            python = str(_copy_once(f"copy:{base}", lambda root: _runtime_venv(root, base, copy=True)))
    if not _imports(server, python):
        raise SshdError(f"the remote user cannot import pao with {python}")
    if claude is not None and (force or server.run_remote(["test", "-r", str(claude), "-a", "-x", str(claude)]).returncode):
        claude = _copy_once(str(claude), lambda root: _copied_cli(claude, root))
    return RemoteRuntime(python, claude)


def _imports(server: LoopbackSshd, python: str) -> bool:
    try:
        return server.run_remote([python, "-c", "import " + ", ".join(REMOTE_PACKAGES)]).returncode == 0
    except OSError:  # not even executable by that account
        return False


def _base_python(server: LoopbackSshd) -> str:
    """An interpreter of this Python version that the remote account can run (the packages' ABI)."""
    version = f"{sys.version_info[0]}.{sys.version_info[1]}"
    candidates = [os.path.realpath(sys.executable), f"/usr/bin/python{version}", f"/usr/local/bin/python{version}"]
    for candidate in dict.fromkeys(candidates):
        with contextlib.suppress(OSError):
            probe = server.run_remote([candidate, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"])
            if probe.returncode == 0 and probe.stdout.strip() == version:
                return candidate
    raise SshdError(f"no Python {version} that the remote test account can run (tried {', '.join(candidates)}): "
                    f"install python{version} system-wide")


def _copy_once(key: str, make: Callable[[Path], Path]) -> Path:
    if key not in _copies:
        root = Path(tempfile.mkdtemp(prefix="pao-remote-runtime-"))
        root.chmod(0o755)
        atexit.register(shutil.rmtree, root, True)
        _copies[key] = make(root)
        _readable(root)
    return _copies[key]


def _readable(root: Path) -> None:
    for folder, dirs, files in os.walk(root):
        os.chmod(folder, 0o755)
        for name in files:
            path = os.path.join(folder, name)
            if not os.path.islink(path):
                os.chmod(path, os.stat(path).st_mode | 0o444)


def _runtime_venv(root: Path, base: str, *, copy: bool) -> Path:
    """A virtual environment on ``base`` seeing this one's packages (``copy``: holding copies of them,
    the editable ones' sources included)."""
    venv = root / "venv"
    subprocess.run([base, "-m", "venv", "--without-pip", str(venv)], check=True, capture_output=True)
    python = venv / "bin" / "python"
    target = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                                 check=True, capture_output=True, text=True).stdout.strip())
    source = Path(sysconfig.get_path("purelib"))
    if not copy:  # addsitedir also runs the .pth files there (the editable installs' finders)
        (target / "pao-test-runtime.pth").write_text(f"import site; site.addsitedir({str(source)!r})\n")
        return python
    for entry in source.iterdir():
        if entry.name.startswith("__editable__") or entry.name.endswith(".pth") or entry.name == "__pycache__":
            continue  # editable installs point into the checkout: their sources are copied below instead
        if entry.is_dir():
            shutil.copytree(entry, target / entry.name, symlinks=True)
        else:
            shutil.copy2(entry, target / entry.name)
    for package in _editable_packages():
        shutil.copytree(package, target / package.name, ignore=shutil.ignore_patterns("__pycache__"))
    return python


def _editable_packages() -> list[Path]:
    """The source folders of pao's editable distributions (``pao_core``, ``plugins/*/pao_*``, ``pao_testing``)."""
    found = [REPO_ROOT / "pao_core", REPO_ROOT / "testing" / "pao_testing"]
    found += sorted(p for p in (REPO_ROOT / "plugins").glob("*/pao_*") if (p / "__init__.py").exists())
    return found


def _copied_cli(cli: Path, root: Path) -> Path:
    """The pinned CLI's npm prefix (``.cache/claude-code/VERSION``), copied where the remote user can read it."""
    prefix = cli.parents[2]
    shutil.copytree(prefix, root / prefix.name, symlinks=True)
    return root / prefix.name / "node_modules" / ".bin" / "claude"


# -- two machines: this test's pao and the account behind the sshd --------------------

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

    def remote_script(self, relative: str, text: str) -> Path:
        """An executable file at ``relative`` under the remote HOME, the remote user's."""
        path = self.sshd.home / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        path.chmod(0o755)
        self.sshd.give(path.parent)
        return path

    def use_remote_pao(self, command: str) -> None:
        """``pao = COMMAND`` in this side's ``[machines.box]``: say ``~/bin/pao``, a :meth:`remote_script`."""
        config = self.local / "config.toml"
        config.write_text(config.read_text().replace(f'pao = "{" ".join(self.runtime.pao)}"', f'pao = "{command}"'))

    def remote_folder(self, name: str) -> Path:
        folder = self.sshd.home / name
        folder.mkdir()
        self.sshd.give(folder)
        return folder


@contextlib.contextmanager
def two_machines(tmp_path: Path, claude: Path | None, environment: Mapping[str, str], *,
                 shell: str = "/bin/sh") -> Iterator[Box]:
    """A loopback sshd with its account (``shell``: its login shell) and runtime (``claude``: the CLI there), and
    a local pao in ``tmp_path``."""
    server = LoopbackSshd.start(shell=shell)
    try:
        runtime = remote_runtime(server, claude)
        socket = f"pao-remote-{uuid.uuid4().hex[:8]}"
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8", "PAO_TMUX_SOCKET": socket,
               **dict(environment)}
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
