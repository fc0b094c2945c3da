"""The transport: the system's OpenSSH client, multiplexed, never asking, never trusting a new host key.

Every command runs as ``ssh [options] -- HOST 'pao ...'`` (an argv list, no local
shell). ssh hands its remote words to the remote user's login shell as one string, so
:func:`pao_machines.words.remote_command` builds it of words every login shell reads as
themselves (the remote pao's own words travel encoded: :mod:`pao_machines.words`). Options:

- ``BatchMode=yes``: no password or passphrase prompt, ever (a spawn cannot hang on one);
- ``StrictHostKeyChecking=yes``: an unknown or changed host key is a refusal that says
  how to add the key, never a silent trust;
- ``ControlMaster=auto``, ``ControlPersist``: the first command opens a connection that
  later ones reuse (one round trip instead of a handshake); its socket lives in a
  private 0700 folder under PAO_HOME;
- ``ConnectTimeout``: bounded by the command's deadline.
"""

from __future__ import annotations

import hashlib
import os
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Mapping, Sequence

import attrs

from pao_core.errors import PaoError

from pao_machines.targets import Machine
from pao_machines.words import remote_command

CONTROL_PERSIST = 300
"""Seconds an idle multiplexed connection stays open."""
SOCKET_PATH_MAX = 103
"""The longest unix socket path: ``sun_path`` holds 104 bytes on macOS (108 on Linux), the NUL included."""
CONTROL_NAME = 1 + 40 + 17
"""What ssh adds to the folder: ``/%C`` (40 hex digits), and ``.`` + 16 random characters while it binds."""


class MachineUnreachable(PaoError):
    """The machine did not answer (refused, no route, no answer within the deadline)."""


class MachineRefused(PaoError):
    """ssh refused: an unknown or changed host key, a login the machine does not accept."""


class RemoteFailed(PaoError):
    """The remote pao ran and failed: its one-line error, on that machine."""


@attrs.frozen
class Answer:
    """What a remote command printed, and how long it took."""

    stdout: str
    stderr: str
    returncode: int
    seconds: float


@attrs.define
class Ssh:
    """Runs commands on machines with the ``ssh`` on PATH; ``home`` is PAO_HOME (for the control sockets)."""

    home: Path
    environ: Mapping[str, str] = attrs.field(factory=lambda: dict(os.environ))
    program: str = "ssh"

    def control_dir(self) -> Path:
        """The private folder of the multiplexed connections' sockets: under PAO_HOME when its path is short
        enough for a socket, else a per-user folder in the temporary directory named after PAO_HOME."""
        preferred = Path(self.home) / "ssh"
        if len(str(preferred)) + CONTROL_NAME > SOCKET_PATH_MAX:
            digest = hashlib.sha256(str(Path(self.home).resolve()).encode()).hexdigest()[:12]
            preferred = Path(tempfile.gettempdir()) / f"pao-ssh-{os.getuid()}-{digest}"
            if len(str(preferred)) + CONTROL_NAME > SOCKET_PATH_MAX:  # a long TMPDIR (macOS: /var/folders/...)
                preferred = Path("/tmp") / preferred.name
        preferred.mkdir(mode=0o700, parents=True, exist_ok=True)
        status = preferred.lstat()  # a link planted in a shared temporary folder is refused, never followed
        if not stat.S_ISDIR(status.st_mode) or status.st_uid != os.getuid() or status.st_mode & 0o077:
            raise PaoError(f"{preferred}: the ssh control folder must be a folder (not a link) of yours, "
                           "private (0700); remove it")
        return preferred

    def argv(self, machine: Machine, remote: Sequence[str], *, connect_timeout: float) -> list[str]:
        """The ``ssh`` command line that runs ``remote`` (words) on ``machine``."""
        options = machine.options
        argv = [self.program]
        config = options.ssh_config or self.environ.get("PAO_SSH_CONFIG")
        if config:
            argv += ["-F", config]
        for option in (
            "BatchMode=yes",
            "StrictHostKeyChecking=yes",
            f"ConnectTimeout={max(1, round(connect_timeout))}",
            "ControlMaster=auto",
            f"ControlPath={self.control_dir() / '%C'}",
            f"ControlPersist={CONTROL_PERSIST}",
            "ServerAliveInterval=5",
            "ServerAliveCountMax=2",
            "LogLevel=ERROR",
        ):
            argv += ["-o", option]
        if options.port:
            argv += ["-p", str(options.port)]
        if options.user:
            argv += ["-l", options.user]
        if options.identity_file:
            argv += ["-i", os.path.expanduser(options.identity_file), "-o", "IdentitiesOnly=yes"]
        argv += ["--", options.host.strip("[]"), remote_command(remote)]
        return argv

    def run(self, machine: Machine, remote: Sequence[str], *, timeout: float, stdin: str | None = None,
            connect_timeout: float | None = None) -> Answer:
        """Run ``remote`` there; raise ``MachineUnreachable``/``MachineRefused`` for ssh's own failures.

        The remote command's own exit code comes back in the answer (a failing pao is
        not a transport error).
        """
        argv = self.argv(machine, remote, connect_timeout=min(timeout, connect_timeout or machine.options.deadline))
        started = time.monotonic()
        try:
            done = subprocess.run(
                argv, input=stdin if stdin is not None else "", capture_output=True, text=True, timeout=timeout,
                env=dict(self.environ),
            )
        except subprocess.TimeoutExpired:
            raise MachineUnreachable(f"machine {machine.name} did not answer within {timeout:g} s") from None
        except FileNotFoundError:
            raise self._missing() from None
        seconds = time.monotonic() - started
        if done.returncode == 255:
            raise transport_error(machine, done.stderr)
        return Answer(done.stdout, done.stderr, done.returncode, seconds)

    def run_in_terminal(self, machine: Machine, remote: Sequence[str]) -> int:
        """Run ``remote`` there in this terminal (``ssh -t``); its exit code. ssh's own failures are raised as
        :meth:`run` raises them: the remote side's output, its errors included, comes through the terminal
        (without one here, its stderr is passed on once it ends)."""
        argv = self.argv(machine, remote, connect_timeout=machine.options.deadline)
        argv.insert(1, "-t")
        try:
            done = subprocess.run(argv, stderr=subprocess.PIPE, text=True, env=dict(self.environ), check=False)
        except FileNotFoundError:
            raise self._missing() from None
        if done.returncode == 255:
            raise transport_error(machine, done.stderr)
        sys.stderr.write(done.stderr)
        return done.returncode

    def _missing(self) -> PaoError:
        return PaoError(f"'{self.program}' is not installed: pao reaches other machines with OpenSSH's client")

    def close(self, machine: Machine) -> None:
        """Close the machine's multiplexed connection, if one is open (``ssh -O exit``)."""
        argv = self.argv(machine, [], connect_timeout=1)
        argv[-3:] = ["-O", "exit", "--", machine.options.host.strip("[]")]
        subprocess.run(argv, capture_output=True, timeout=10, env=dict(self.environ))


def transport_error(machine: Machine, stderr: str) -> PaoError:
    """ssh's failure (exit 255) as one line that names the machine and says what to do."""
    text = " ".join(stderr.split())
    host = machine.options.host.strip("[]")
    scan = f"ssh-keyscan {'-p ' + str(machine.options.port) + ' ' if machine.options.port else ''}{host}"
    if "REMOTE HOST IDENTIFICATION HAS CHANGED" in text:
        return MachineRefused(
            f"machine {machine.name}: the host key of {host} has CHANGED; pao refuses to connect. If the change is "
            f"expected, remove the old key with 'ssh-keygen -R {host}' and add the new one after checking it")
    if "host key is known" in text or "Host key verification failed" in text:
        return MachineRefused(
            f"machine {machine.name}: the host key of {host} is not known, so pao will not connect. Check its "
            f"fingerprint, then add it: '{scan} >> ~/.ssh/known_hosts' (or connect once with ssh yourself)")
    if "Permission denied" in text or "Too many authentication failures" in text:
        who = machine.options.user or "your user"
        return MachineRefused(
            f"machine {machine.name}: {host} refused the login of {who} (pao never asks for a password: add your "
            f"public key to that account's ~/.ssh/authorized_keys, or set identity_file in [machines.{machine.name}])")
    reason = text.removeprefix("ssh: ") or "ssh failed without a message"
    return MachineUnreachable(f"machine {machine.name} is unreachable: {reason}")
