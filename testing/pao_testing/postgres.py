"""A throwaway PostgreSQL cluster for tests and benchmarks (real server, real sockets).

Usage::

    from pao_testing.postgres import postgres_url

    with postgres_url() as url:          # PAO_TEST_POSTGRES_URL if set, else a new cluster
        ...                              # url: postgresql://pao@127.0.0.1:PORT/pao

    cluster = ThrowawayCluster.start()   # or by hand; cluster.stop() removes it
    cluster.url, cluster.port, cluster.stop(), cluster.kill()

It finds ``initdb``/``pg_ctl`` in ``/usr/lib/postgresql/*/bin`` or on ``PATH``, picks a
free port on 127.0.0.1, keeps data and unix socket in a temporary folder, and, since
the server refuses to run as root, runs as ``nobody`` when the caller is root. The
role ``pao`` (password ``pao-test-secret``, md5/scram over TCP) owns database ``pao``.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Iterator

import attrs

PASSWORD = "pao-test-secret"
USER = "pao"
DATABASE = "pao"
UNPRIVILEGED = "nobody"


class ClusterError(RuntimeError):
    """The throwaway cluster could not be started."""


def find_bindir() -> Path:
    """The folder holding ``initdb`` and ``pg_ctl`` (newest installed version first)."""
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=_version_key, reverse=True)
    for folder in candidates:
        if os.access(os.path.join(folder, "initdb"), os.X_OK) and os.access(os.path.join(folder, "pg_ctl"), os.X_OK):
            return Path(folder)
    found = shutil.which("initdb")
    if found and shutil.which("pg_ctl"):
        return Path(os.path.realpath(found)).parent
    raise ClusterError("initdb/pg_ctl not found: install PostgreSQL server binaries (scripts/setup --test does)")


def _version_key(path: str) -> tuple[int, ...]:
    parts = path.split("/")
    try:
        return tuple(int(piece) for piece in parts[-2].split("."))
    except ValueError:
        return (0,)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@attrs.define
class ThrowawayCluster:
    """One running cluster; :meth:`stop` shuts it down and deletes its folder."""

    root: Path
    bindir: Path
    port: int
    run_as: str | None
    password: str = PASSWORD

    @property
    def data(self) -> Path:
        return self.root / "data"

    @property
    def socket_dir(self) -> Path:
        return self.root / "socket"

    @property
    def url(self) -> str:
        return f"postgresql://{USER}:{self.password}@127.0.0.1:{self.port}/{DATABASE}"

    @classmethod
    def start(cls, *, timeout: float = 60.0) -> ThrowawayCluster:
        bindir = find_bindir()
        run_as = UNPRIVILEGED if os.geteuid() == 0 else None
        root = Path(tempfile.mkdtemp(prefix="pao-pg-"))
        cluster = cls(root, bindir, free_port(), run_as)
        try:
            cluster._initdb()
            cluster._pg_ctl("start", "-t", str(int(timeout)))
            cluster._create_database()
        except BaseException:  # Ctrl-C included: a half-started server is stopped too
            cluster.stop()
            raise
        return cluster

    def _run(self, *argv: str, timeout: float = 120.0) -> None:
        kwargs: dict = {}
        if self.run_as:
            kwargs.update(user=self.run_as, group=_group_of(self.run_as), extra_groups=[])
        result = subprocess.run(
            list(argv), capture_output=True, text=True, timeout=timeout, cwd=self.root, env=self._env(), **kwargs
        )
        if result.returncode != 0:
            tail = (result.stderr or result.stdout).strip().splitlines()[-3:]
            log = self.root / "server.log"
            if log.exists():
                tail += log.read_text(errors="replace").strip().splitlines()[-3:]
            raise ClusterError(f"{Path(argv[0]).name} failed: {' | '.join(tail)}")

    def _env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
        env.update(LC_ALL="C.UTF-8", LANG="C.UTF-8", HOME=str(self.root))
        return env

    def _initdb(self) -> None:
        self.socket_dir.mkdir()
        password_file = self.root / "pwfile"
        password_file.write_text(self.password + "\n")
        if self.run_as:
            _chown_tree(self.root, self.run_as)
        self._run(
            str(self.bindir / "initdb"), "-D", str(self.data), "-U", USER, "--pwfile", str(password_file),
            "-A", "scram-sha-256", "--auth-local=trust", "-E", "UTF8", "--locale=C.UTF-8", "--no-sync",
        )
        with (self.data / "postgresql.conf").open("a") as conf:
            # fsync off is safe for a server crash (the OS keeps the writes), not for a machine crash.
            conf.write("\nfsync = off\nfull_page_writes = off\nmax_connections = 50\n")
    def _pg_ctl(self, action: str, *options: str) -> None:
        if action == "start":
            server = f"-k {self.socket_dir} -p {self.port} -c listen_addresses=127.0.0.1"
            options = ("-w", "-l", str(self.root / "server.log"), "-o", server, *options)
        self._run(str(self.bindir / "pg_ctl"), "-D", str(self.data), *options, action)

    def _create_database(self) -> None:
        import psycopg  # loads psycopg on use: start-up stays light

        admin = f"postgresql://{USER}:{self.password}@127.0.0.1:{self.port}/postgres"
        with psycopg.connect(admin, autocommit=True, connect_timeout=10) as connection:
            connection.execute(f"CREATE DATABASE {DATABASE} OWNER {USER}")

    def is_running(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                return True
        except OSError:
            return False

    def stop(self) -> None:
        """Stop the server (fast shutdown) and remove its folder."""
        with contextlib.suppress(Exception):
            if (self.data / "postmaster.pid").exists():
                self._pg_ctl("stop", "-w", "-m", "fast")
        self._remove()

    def kill(self) -> None:
        """Stop the server at once (immediate shutdown), keeping the folder: a crash."""
        self._pg_ctl("stop", "-w", "-m", "immediate")

    def restart(self) -> None:
        """Start a stopped or killed server again on the same port."""
        self._pg_ctl("start")

    def _remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def _group_of(user: str) -> int:
    return pwd.getpwnam(user).pw_gid


def _chown_tree(root: Path, user: str) -> None:
    entry = pwd.getpwnam(user)
    for folder, dirs, files in os.walk(root):
        os.chown(folder, entry.pw_uid, entry.pw_gid)
        for name in files:
            os.chown(os.path.join(folder, name), entry.pw_uid, entry.pw_gid)
    # The temporary folder's parent must let the server user reach its files.
    os.chmod(root, 0o700)


@contextlib.contextmanager
def postgres_url(environ: dict[str, str] | None = None) -> Iterator[str]:
    """``PAO_TEST_POSTGRES_URL`` when set, else the URL of a new throwaway cluster (stopped after)."""
    env = os.environ if environ is None else environ
    given = env.get("PAO_TEST_POSTGRES_URL", "").strip()
    if given:
        yield given
        return
    cluster = ThrowawayCluster.start()
    try:
        yield cluster.url
    finally:
        cluster.stop()


def interrupt_on_sigterm() -> None:
    """Turn SIGTERM into KeyboardInterrupt, so ``finally`` blocks (and :meth:`ThrowawayCluster.stop`)
    run when a bench or script is killed politely."""
    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, interrupt)


def wait_for_port(port: int, timeout: float = 10.0) -> bool:
    """True once something accepts TCP connections on 127.0.0.1:``port``."""
    ends = time.monotonic() + timeout
    while time.monotonic() < ends:
        with contextlib.suppress(OSError):
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return True
        time.sleep(0.05)
    return False
