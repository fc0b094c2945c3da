"""Vectors for what a live source brought in, embedded in the background after the search.

A search keeps its sources live within its own time bound: the longterm store syncs a
changed MCP memory file, the history store indexes new transcripts. Neither embeds what
it brought in (embedding costs seconds, and numpy and the model are not loaded in every
process), so until then new memory is found lexically only. :func:`embed_later` starts
one detached process per store that runs the store's own command for it (``pao memory
sync``, ``pao history index``) once the process that searched is over (at most
:data:`WAIT_S`, for a long-lived one such as ``pao mcp``), on the idle CPU scheduling
class (``nice 19`` where there is none): it never takes a core from a spawn or a search.

One per store at a time: the searching process takes the store's lock before it starts
the job and hands it over (an inherited fd), so a second search that finds the lock held
starts none (the running one sees everything written before it reads). Its output goes to a private log
beside the lock (``$PAO_HOME/background/``). ``PAO_BACKGROUND_EMBEDDING=0``, or
``background_embedding = false`` in the store's table, turns it off: new memory then
waits for the command to be run by hand.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Sequence

ENV = "PAO_BACKGROUND_EMBEDDING"
WAIT_S = 10.0
"""The longest the job waits for the process that searched to end before it starts."""
END_MARK = "exit "
"""How the job's log marks the end of one run of its command (``exit CODE``)."""
RUNS = 3
"""Runs of the command at most per job (a search that wrote meanwhile asks for one more)."""
LOG_LIMIT = 256 * 1024
"""A log larger than this is started again (it holds the last runs' output only)."""


def enabled(option: bool) -> bool:
    """Whether a store's background jobs run: its option and ``$PAO_BACKGROUND_EMBEDDING``."""
    return option and os.environ.get(ENV, "1").strip().lower() not in ("0", "false", "no", "off")


def embeddings_available() -> bool:
    """Whether the model is installed (no numpy: a look at what is installed)."""
    from pao_embeddings.model import available  # its module loads attrs and the waiting helpers: on use only

    return available()


def folder(home: Path) -> Path:
    return home / "background"


def embed_later(name: str, command: Sequence[str], home: Path) -> bool:
    """Start ``pao COMMAND`` for store ``name`` in the background (see the module); True when started.

    Never waits and never raises: a job that cannot start leaves the new memory to
    lexical search until the next search or the command run by hand.
    """
    import subprocess  # only when there is something to embed

    from pao_core.errors import PaoError  # only when there is something to embed
    from pao_core.files import LockTimeout, atomic_write, open_no_follow, private_dir, take_lock  # likewise

    try:
        where = private_dir(folder(home))
        atomic_write(where / f"{name}.pending", str(os.getpid()))  # a new mtime: a running job runs its command again
        try:  # the store's lock is taken here and handed to the job: never two jobs for one store
            lock = take_lock(where / f"{name}.lock", timeout=0)
        except LockTimeout:
            return False  # one runs (or waits for its searcher): it reads the store again after this write
        try:
            log = open_no_follow(where / f"{name}.log", os.O_WRONLY | os.O_APPEND | os.O_CREAT)
            try:
                subprocess.Popen(  # noqa: S603 - our own interpreter and module, no shell
                    [sys.executable, "-m", "pao_embeddings.later", str(where / f"{name}.lock"), str(os.getpid()),
                     str(lock), "--", *command],
                    stdin=subprocess.DEVNULL, stdout=log, stderr=log, close_fds=True, pass_fds=(lock,),
                    start_new_session=True, cwd="/",
                )
            finally:
                os.close(log)
        finally:
            os.close(lock)  # the job's copy keeps the lock held
    except (OSError, PaoError):
        return False
    return True


def _stamp(path: Path) -> tuple[int, int] | None:
    """The pending marker's identity: each search rewrites it (a new file, so a new inode, however coarse the clock)."""
    try:
        status = path.stat()
    except OSError:
        return None
    return status.st_ino, status.st_mtime_ns


def _lower_priority() -> None:
    """The idle scheduling class (Linux): this process runs only on a CPU nothing else wants."""
    try:
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))  # type: ignore[attr-defined]
    except (AttributeError, OSError):
        os.nice(19)


def _wait_for(pid: int, timeout: float) -> None:
    """Until process ``pid`` has ended, at most ``timeout`` seconds (a pidfd where there is one)."""
    import select  # only in the job

    try:
        handle = os.pidfd_open(pid)  # type: ignore[attr-defined]
    except (AttributeError, OSError):  # gone already, or no pidfd (macOS): look, with backoff
        from pao_core.waiting import poll_until  # only in the job

        poll_until(lambda: not _alive(pid), timeout, first=0.01, cap=0.2)
        return
    try:
        select.select([handle], [], [], timeout)
    finally:
        os.close(handle)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: it exists
        return True
    return True


def run(argv: Sequence[str]) -> int:
    """The job: ``LOCK PID LOCK_FD -- COMMAND...`` (``LOCK_FD``: the lock, already held for it)."""
    import contextlib  # only in the job
    import datetime  # only in the job

    lock_path, pid, lock_fd, _, *command = argv
    _lower_priority()
    with contextlib.ExitStack() as held:
        held.callback(os.close, int(lock_fd))  # the lock its searcher took for it: held until this job ends
        _wait_for(int(pid), WAIT_S)
        pending = Path(lock_path).with_suffix(".pending")
        if os.fstat(sys.stdout.fileno()).st_size > LOG_LIMIT:  # the log, opened without following a link
            os.ftruncate(sys.stdout.fileno(), 0)
        from pao_core.cli import main  # only in the job, once it runs

        code = 0
        for _ in range(RUNS):  # again while searches wrote more meanwhile (they found this job's lock held)
            seen = _stamp(pending)
            print(f"{datetime.datetime.now().astimezone().isoformat(timespec='milliseconds')} pao {' '.join(command)}",
                  flush=True)
            code = main(command)
            print(f"{END_MARK}{code}", flush=True)
            if code or _stamp(pending) == seen:
                break
        return code


def last_job(name: str, home: Path) -> str | None:
    """What the store's background job did last (``pao doctor``, a store's health line); None before any."""
    from pao_core.errors import PaoError  # not needed until this runs: start-up stays light
    from pao_core.files import lock_is_held, open_no_follow  # likewise

    where = folder(home)
    try:
        if lock_is_held(where / f"{name}.lock"):
            return f"background embedding: a job is running ({where / name}.log)"
        with os.fdopen(open_no_follow(where / f"{name}.log", os.O_RDONLY), "rb") as handle:
            lines = handle.read().decode(errors="replace").splitlines()
    except PaoError as exc:  # a link or a FIFO planted at the lock or the log
        return f"background embedding: {exc}"
    except OSError:
        return None
    started = [n for n, line in enumerate(lines) if line[:4].isdigit() and " pao " in line]
    if not started:
        return None
    run = lines[started[-1]:]
    when = run[0].split(" ", 1)[0][:19].replace("T", " ")
    ended = next((line[len(END_MARK):] for line in run if line.startswith(END_MARK)), None)
    if ended == "0":
        return f"background embedding: last job {when} ok"
    from pao_core.sanitize import clean_inline, truncate  # an error may quote the memory file: it leaves pao cleaned

    last = next((line for line in reversed(run[1:]) if not line.startswith(END_MARK)), "")
    outcome = "did not finish" if ended is None else f"failed (exit {ended}): {truncate(clean_inline(last), 200)}"
    return f"background embedding: last job {when} {outcome} (see {where / name}.log)"


if __name__ == "__main__":
    sys.exit(run(sys.argv[1:]))
