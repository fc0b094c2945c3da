"""A second machine on this one: an OpenSSH server on 127.0.0.1 with a user of its own.

Usage::

    with LoopbackSshd.start() as machine:          # sshd on a free port, its own host key and config
        machine.target                            # ssh://pao-ssh-1a2b3c4d@127.0.0.1:PORT
        machine.ssh_config                        # an ssh_config (-F) with the client key and known_hosts
        machine.set_environment({...})             # what the remote sessions see (stub URL, CLI path...)
        machine.run_remote(["tmux", "-V"])        # run a command as the remote user, here (for checks)
        machine.stop(); machine.restart()         # the machine going away mid-run, and coming back

The server refuses root and passwords (public keys only, ``BatchMode`` clients).
As root (CI), the fixture creates a throwaway unprivileged account ``pao-ssh-XXXXXXXX``
whose HOME is a folder of the fixture, with its own ``~/.ssh/authorized_keys``; it is
removed with its processes on :meth:`close`. Not root, sshd can only log the caller in:
the remote side is then the same account with a HOME of its own (set by the key's
``environment=`` option), which is still a separate pao, tmux and Claude Code home.

What the remote user runs (pao, the agent CLI) and a test's two pao's are
``pao_testing.two_machines``.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from pathlib import Path
from typing import Iterator, Mapping, Sequence

import attrs

from pao_testing.postgres import free_port, wait_for_port

SSHD = "/usr/sbin/sshd"


class SshdError(RuntimeError):
    """The loopback sshd could not be started."""


@attrs.define
class Account:
    """The remote machine's user: its name, ids and HOME."""

    name: str
    uid: int
    gid: int
    home: Path
    created: bool


@attrs.define
class LoopbackSshd:
    """One running sshd and its account; :meth:`close` removes everything it made."""

    root: Path
    port: int
    account: Account
    process: subprocess.Popen | None = None
    environment: dict[str, str] = attrs.field(factory=dict)

    # -- starting --------------------------------------------------------------------

    @classmethod
    def start(cls, *, environment: Mapping[str, str] | None = None, shell: str = "/bin/sh") -> LoopbackSshd:
        """``shell``: the remote account's login shell, which runs every command ssh sends (as root only:
        otherwise the account is the caller's, with the caller's shell)."""
        if not os.access(SSHD, os.X_OK):
            raise SshdError(f"{SSHD} not found: install openssh-server (scripts/setup --test does)")
        root = Path(tempfile.mkdtemp(prefix="pao-sshd-"))
        root.chmod(0o711)  # the remote account reaches its HOME below; nothing here is listable
        account = _make_account(root / "home", shell)
        server = cls(root, free_port(), account, environment=dict(environment or {}))
        try:
            server._keys()
            server.set_environment(server.environment)
            server._configure()
            server.restart()
        except BaseException:
            server.close()
            raise
        return server

    def __enter__(self) -> LoopbackSshd:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def server_dir(self) -> Path:
        return self.root / "server"

    @property
    def client_dir(self) -> Path:
        return self.root / "client"

    @property
    def ssh_config(self) -> Path:
        """An ssh_config for ``ssh -F``: the client key, this server's known host key, nothing else."""
        return self.client_dir / "ssh_config"

    @property
    def known_hosts(self) -> Path:
        return self.client_dir / "known_hosts"

    @property
    def user(self) -> str:
        return self.account.name

    @property
    def home(self) -> Path:
        return self.account.home

    @property
    def target(self) -> str:
        return f"ssh://{self.account.name}@127.0.0.1:{self.port}"

    def _keys(self) -> None:
        for folder in (self.server_dir, self.client_dir):
            folder.mkdir(mode=0o700)
        _keygen(self.server_dir / "host_ed25519")
        _keygen(self.client_dir / "id_ed25519")
        host_key = (self.server_dir / "host_ed25519.pub").read_text().split()
        self.known_hosts.write_text(f"[127.0.0.1]:{self.port} {host_key[0]} {host_key[1]}\n")
        self.ssh_config.write_text(
            "Host *\n"
            f"  IdentityFile {self.client_dir / 'id_ed25519'}\n"
            "  IdentitiesOnly yes\n"
            f"  UserKnownHostsFile {self.known_hosts}\n"
            "  GlobalKnownHostsFile /dev/null\n"
        )

    def forget_host_key(self) -> None:
        """Empty the client's known_hosts: the next connection meets an unknown host key."""
        self.known_hosts.write_text("")

    def _configure(self) -> None:
        root = os.geteuid() == 0
        keys = ".ssh/authorized_keys" if root else str(self.home / ".ssh" / "authorized_keys")
        lines = [
            f"Port {self.port}", "ListenAddress 127.0.0.1", "AddressFamily inet",
            f"HostKey {self.server_dir / 'host_ed25519'}", f"PidFile {self.server_dir / 'sshd.pid'}",
            "PermitRootLogin no", "PasswordAuthentication no", "KbdInteractiveAuthentication no",
            "PubkeyAuthentication yes", "AuthenticationMethods publickey", "UsePAM no",
            f"AllowUsers {self.account.name}", f"AuthorizedKeysFile {keys}",
            "PermitUserEnvironment yes",  # the key's environment= options: the stub URL, the CLI's path
            # Not root, the keys file sits below /tmp (world-writable): sshd's ownership walk would refuse it.
            f"StrictModes {'yes' if root else 'no'}",
            "AllowTcpForwarding no", "X11Forwarding no", "PrintMotd no", "PrintLastLog no",
            "MaxSessions 50", "MaxStartups 50:30:100", "LogLevel VERBOSE",
        ]
        (self.server_dir / "sshd_config").write_text("\n".join(lines) + "\n")
        if root:
            Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # privilege separation; a fresh machine lacks it
        check = subprocess.run([SSHD, "-t", "-f", str(self.server_dir / "sshd_config")], capture_output=True, text=True)
        if check.returncode != 0:
            raise SshdError(f"sshd refused its configuration: {check.stderr.strip()}")

    def set_environment(self, environment: Mapping[str, str]) -> None:
        """What every later session of the remote user sees (its key's ``environment=`` options)."""
        self.environment = dict(environment)
        env = {"HOME": str(self.home), **self.environment}
        for key, value in env.items():
            if '"' in value or "\n" in value or "\\" in value:
                raise ValueError(f"environment {key}: quotes, backslashes and newlines cannot go into authorized_keys")
        options = ",".join(f'environment="{key}={value}"' for key, value in env.items())
        public = (self.client_dir / "id_ed25519.pub").read_text().strip()
        ssh_dir = self.home / ".ssh"
        ssh_dir.mkdir(mode=0o700, exist_ok=True)
        keys = ssh_dir / "authorized_keys"
        keys.write_text(f"{options} {public}\n")
        keys.chmod(0o600)
        _give(self.account, ssh_dir, keys)

    # -- running -----------------------------------------------------------------------

    def restart(self) -> None:
        """Start sshd (again, on the same port, with the same host key)."""
        log = (self.root / "sshd.log").open("ab")
        self.process = subprocess.Popen(
            [SSHD, "-D", "-e", "-f", str(self.server_dir / "sshd_config")], stdout=log, stderr=log,
            stdin=subprocess.DEVNULL, start_new_session=True,
        )
        log.close()
        if not wait_for_port(self.port, timeout=15):
            self.stop()
            raise SshdError(f"sshd did not listen on 127.0.0.1:{self.port}: {self.log_tail()}")

    def stop(self) -> None:
        """Stop the server and every session it holds (the machine went away); the account stays."""
        if self.process is None:
            return
        sessions = _descendants(self.process.pid)  # each connection runs in a session of its own
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)  # sshd's own group: the listener
        for pid in sessions:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        self.process.wait(timeout=10)
        self.process = None
        if self.account.created:
            _end_processes(self.account.uid, only=("sshd",))

    def log_tail(self, lines: int = 5) -> str:
        path = self.root / "sshd.log"
        return " | ".join(path.read_text(errors="replace").strip().splitlines()[-lines:]) if path.exists() else ""

    def run_remote(self, argv: Sequence[str], *, env: Mapping[str, str] | None = None,
                   timeout: float = 60) -> subprocess.CompletedProcess[str]:
        """Run ``argv`` here as the remote user, with its HOME and environment (for checks and set-up)."""
        full = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8", "HOME": str(self.home),
                "USER": self.account.name, **self.environment, **(env or {})}
        kwargs: dict = {}
        if self.account.created:
            kwargs.update(user=self.account.uid, group=self.account.gid, extra_groups=[])
        return subprocess.run(list(argv), env=full, cwd=self.home, capture_output=True, text=True,
                              timeout=timeout, **kwargs)

    def give(self, *paths: Path) -> None:
        """Hand files written as the test's user over to the remote account."""
        _give(self.account, *paths)

    def close(self) -> None:
        """Stop the server, end the remote user's processes, remove the account and every file."""
        self.stop()
        socket = self.environment.get("PAO_TMUX_SOCKET")
        if socket:
            with contextlib.suppress(Exception):
                self.run_remote(["tmux", "-L", socket, "kill-server"], timeout=10)
        if self.account.created:
            _end_processes(self.account.uid)
            subprocess.run(["userdel", self.account.name], capture_output=True)
        shutil.rmtree(self.root, ignore_errors=True)


def _keygen(path: Path) -> None:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "pao-test", "-f", str(path)],
                   check=True, capture_output=True)


def _make_account(home: Path, shell: str) -> Account:
    """As root: a new unprivileged account whose HOME is ``home`` and login shell ``shell``; otherwise the caller
    with ``home``."""
    if os.geteuid() != 0:
        home.mkdir(mode=0o700)
        return Account(pwd.getpwuid(os.getuid()).pw_name, os.getuid(), os.getgid(), home, created=False)
    name = f"pao-ssh-{uuid.uuid4().hex[:8]}"
    # '*': no password, yet not "locked" ('!'), which sshd refuses even for key logins without PAM.
    subprocess.run(["useradd", "--home-dir", str(home), "--create-home", "--shell", shell, "--user-group",
                    "--password", "*", "--comment", "pao test machine", name], check=True, capture_output=True)
    entry = pwd.getpwnam(name)
    home.chmod(0o700)
    return Account(name, entry.pw_uid, entry.pw_gid, home, created=True)


def _give(account: Account, *paths: Path) -> None:
    if not account.created:
        return
    for path in paths:
        for folder, dirs, files in os.walk(path) if path.is_dir() else [(str(path.parent), [], [path.name])]:
            targets = [folder] if path.is_dir() else []
            for name in [*dirs, *files]:
                targets.append(os.path.join(folder, name))
            for target in targets:
                os.chown(target, account.uid, account.gid, follow_symlinks=False)


def _end_processes(uid: int, only: Sequence[str] = ()) -> None:
    """End the processes of ``uid`` (a throwaway account this fixture made): TERM, then KILL."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        pids = [pid for pid in _pids_of(uid) if not only or _comm(pid) in only]
        if not pids:
            return
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)
        ends = time.monotonic() + 3
        while time.monotonic() < ends and any(pid in _pids_of(uid) for pid in pids):
            time.sleep(0.05)


def _descendants(root: int) -> list[int]:
    """Every process below ``root`` (from ``/proc``), children before their own children."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, ValueError, IndexError):
                parents[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
    found, frontier = [], [root]
    while frontier:
        children = [pid for pid, parent in parents.items() if parent in frontier]
        found += children
        frontier = children
    return found


def _pids_of(uid: int) -> list[int]:
    """The live processes of ``uid``: not a zombie, which has ended already and holds nothing (one whose parent
    went first waits for init to reap it, in some containers a second or two later)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, IndexError):
                if entry.stat().st_uid == uid and (entry / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
                    pids.append(int(entry.name))
    return pids


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


@contextlib.contextmanager
def loopback_sshd(environment: Mapping[str, str] | None = None) -> Iterator[LoopbackSshd]:
    server = LoopbackSshd.start(environment=environment)
    try:
        yield server
    finally:
        server.close()
