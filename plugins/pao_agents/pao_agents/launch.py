"""The one launcher of agents in terminals: ``python -I -S .../pao_agents/launch.py SPEC``.

A terminal driver writes the agent's command and exact environment into SPEC, a
private (0600) JSON file ``{"argv": [...], "env": {...}}`` (:func:`write_spec`), and
starts this script in the new pane or tab (:func:`launcher_argv`). The script reads
SPEC, deletes it at once, and replaces itself with the agent. So neither the words of
the command nor the environment (API keys) ever pass through tmux's command line or a
line typed into the user's shell, where they would show on screen and land in the
shell's history; and variables pao removed stay removed, whatever the terminal's own
shell or server has.

Run as a script it needs the standard library only: ``-I -S`` skips ``site`` (and
pao's own packages) so the agent starts fast and nothing else is imported.

A window can be opened before its agent's command is known (:func:`open_gate`): it
runs ``launch.py --await GATE``, which waits for the spec to appear at GATE (a path in
a private folder of its own), then goes on as above. ``pao spawn`` opens the window
while the briefing is gathered and puts the spec there (:func:`release_gate`) only
once the briefing, the session files and the trust pre-seed are written, so the agent
itself starts after everything it reads at start-up exists.

A spec may also name a briefing pipe (:func:`release_gate`'s ``briefing``): the agent's
briefing file is then a FIFO the CLI reads once as it starts, and pao writes the briefing
beside it (``READY``) once it is composed. Before the exec the launcher forks a feeder
(:func:`feed_briefing`) that gives the CLI the briefing through the pipe as soon as both are
there: so the CLI starts while the briefing is still gathered, and its first read waits
for it. The wait is bounded (the spec's ``wait``, and no longer than the spawning pao lives):
past it the CLI reads an empty briefing and goes on.
"""

from __future__ import annotations

import json
import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:  # importing typing would cost the launcher more than all the rest
    from typing import Mapping, Sequence

LAUNCHER_PATH = os.path.abspath(__file__)

TERMINAL_OWN = (
    "TERM",
    "TERM_PROGRAM",
    "TERM_PROGRAM_VERSION",
    "TERM_SESSION_ID",
    "COLORTERM",
    "TMUX",
    "TMUX_PANE",
)
"""The terminal's identity: the pane's or tab's own values beat the spawning process's."""

ENV_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
GATE_WAIT = 300.0
"""Seconds a window opened early waits for its spec; then it ends (the pao that opened it is gone)."""
GATE_POLL = 0.002
FEED_POLL = 0.003
"""Seconds between the feeder's looks for the briefing and for the CLI's read (each look is one system call)."""
READER_WAIT = 120.0
"""Seconds the feeder waits for the CLI to open its briefing pipe; then the pipe becomes a plain file."""
READY_SUFFIX = ".ready"
"""The composed briefing, written whole beside the pipe (``briefing.md.ready``), which the feeder hands over."""


def write_spec(command: Sequence[str], env: Mapping[str, str]) -> str:
    """Write the launch spec of ``command`` with exactly ``env`` to a private file; return its path.

    Raises ``ValidationError`` (bad command or variable name) before anything is
    written, and ``PaoError`` when the file cannot be written.
    """
    # Imported here: run as a script, this module must not need pao_core or be slowed by these.
    import tempfile

    from pao_core.errors import PaoError  # (as above)

    data = _spec_json(command, env)
    try:
        fd, path = tempfile.mkstemp(prefix="pao-launch-", suffix=".json")  # mode 0600
    except OSError as exc:
        raise PaoError(f"cannot write the agent's launch file in {tempfile.gettempdir()}: {exc.strerror}") from None
    _fill(fd, path, data)
    return path


def _spec_json(command: Sequence[str], env: Mapping[str, str], briefing: Mapping[str, object] | None = None) -> str:
    import re  # (as in write_spec)

    from pao_core.errors import ValidationError  # (as in write_spec)

    if not command:
        raise ValidationError("the agent's command is empty")
    for name in env:
        if not re.fullmatch(ENV_NAME, name):
            raise ValidationError(f"environment variable name {name!r} is not valid")
    for text in (*command, *env.values()):
        if "\0" in text:
            raise ValidationError(f"a NUL byte cannot be passed to a program: {text!r}")
    return json.dumps({"argv": list(command), "env": dict(env), **({"briefing": dict(briefing)} if briefing else {})})


def _fill(fd: int, path: str, data: str) -> None:
    from pao_core.errors import PaoError  # (as in write_spec)

    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(data)
    except OSError as exc:
        discard_spec(path)
        raise PaoError(f"cannot write the agent's launch file {path}: {exc.strerror}") from None


def open_gate() -> str:
    """A path, in a new private (0700) folder, where :func:`release_gate` will put an agent's spec."""
    import tempfile  # (as in write_spec)

    return os.path.join(tempfile.mkdtemp(prefix="pao-gate-"), "spec.json")


def gate_argv(gate: str) -> list[str]:
    """The command of a window that waits at ``gate`` for its agent (given to a driver's ``spawn``)."""
    return [sys.executable, "-I", "-S", LAUNCHER_PATH, "--await", gate]


def release_gate(gate: str, command: Sequence[str], env: Mapping[str, str], briefing: Mapping[str, object] | None = None) -> None:
    """Start the agent of the window waiting at ``gate``: its spec, written whole and then renamed there.

    ``briefing``: ``{"pipe": PATH, "wait": SECONDS, "owner": PID}`` when the agent's briefing file is a pipe that
    :func:`feed_briefing` fills (the spawning pao writes ``PATH + READY_SUFFIX``; ``owner`` is its process)."""
    import tempfile  # (as in write_spec)

    data = _spec_json(command, env, briefing)
    fd, path = tempfile.mkstemp(dir=os.path.dirname(gate), prefix=".spec-", suffix=".json")  # mode 0600
    _fill(fd, path, data)
    os.replace(path, gate)


def close_gate(gate: str) -> None:
    """Remove a gate's folder and whatever is left in it (the spawn failed before its agent started)."""
    import shutil  # (as in write_spec)

    shutil.rmtree(os.path.dirname(gate), ignore_errors=True)


def launcher_argv(spec_path: str) -> list[str]:
    """The command that starts the agent described by ``spec_path``."""
    return [sys.executable, "-I", "-S", LAUNCHER_PATH, spec_path]


def discard_spec(spec_path: str) -> None:
    """Delete a spec whose launcher will never run (the spawn failed); gone already is fine."""
    try:
        os.unlink(spec_path)
    except FileNotFoundError:
        pass


def with_terminal_identity(spec_env: Mapping[str, str], own: Mapping[str, str]) -> dict[str, str]:
    """The spec's environment, with the terminal's own identity taken from ``own`` where it has it."""
    env = dict(spec_env)
    for name in TERMINAL_OWN:
        if name in own:
            env[name] = own[name]
    return env


def _take_spec(path: str) -> tuple[list[str], dict[str, str], dict | None]:
    """The spec's command, environment and briefing pipe; the file is deleted whether it was readable or not."""
    try:
        with open(path, encoding="utf-8") as handle:
            spec = json.load(handle)
    finally:
        discard_spec(path)
    command, env = spec["argv"], spec["env"]
    if not command or not all(isinstance(word, str) for word in command):
        raise ValueError("argv is not a list of words")
    if not all(isinstance(value, str) for value in env.values()):
        raise ValueError("env is not a table of strings")
    briefing = spec.get("briefing")
    if briefing is not None and not (isinstance(briefing.get("pipe"), str) and isinstance(briefing.get("wait"), (int, float))
                                     and isinstance(briefing.get("owner"), int)):
        raise ValueError("briefing is not {pipe, wait, owner}")
    return list(command), dict(env), briefing


def _await(gate: str) -> bool:
    """Wait until the spec appears at ``gate`` (at most :data:`GATE_WAIT` seconds)."""
    import time  # (as in write_spec)

    give_up = time.monotonic() + GATE_WAIT
    while not os.path.exists(gate):
        if time.monotonic() > give_up:
            return False
        time.sleep(GATE_POLL)
    return True


def _start_feeder(pipe: str, wait: float, owner: int) -> None:
    """:func:`feed_briefing` in a grandchild of its own session (no zombie of the CLI's, no signal from its terminal)."""
    child = os.fork()
    if child:
        os.waitpid(child, 0)
        return
    try:
        os.setsid()
        if os.fork() == 0:
            null = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(null, fd)
            feed_briefing(pipe, wait, owner)
    finally:
        os._exit(0)


def feed_briefing(pipe: str, wait: float, owner: int) -> bool:
    """Give the CLI reading the FIFO ``pipe`` the briefing pao writes to ``pipe + READY_SUFFIX``; ``True`` if it did.

    The briefing is waited for at most ``wait`` seconds, and no longer than process ``owner`` (the spawning pao)
    lives: then the CLI reads an empty briefing. Then the pipe is written once the CLI opens it (within
    :data:`READER_WAIT`), and replaced by the briefing as a plain file for anything that reads it later."""
    import errno  # (as in write_spec)
    import time  # (as in write_spec)

    ready, give_up = pipe + READY_SUFFIX, time.monotonic() + wait
    while not os.path.exists(ready) and time.monotonic() < give_up and _alive(owner):
        time.sleep(FEED_POLL)
    try:  # the agent's private folder; a link there is still never followed
        with os.fdopen(os.open(ready, os.O_RDONLY | os.O_NOFOLLOW), "rb") as handle:
            data = handle.read()
    except OSError:
        data = None
    reader_by = time.monotonic() + READER_WAIT
    while True:
        try:
            fd = os.open(pipe, os.O_WRONLY | os.O_NONBLOCK | os.O_NOFOLLOW)  # ENXIO until the CLI opens it to read
        except OSError as exc:
            if exc.errno != errno.ENXIO or time.monotonic() > reader_by:
                fd = None
                break
            time.sleep(FEED_POLL if time.monotonic() < reader_by - READER_WAIT + 5 else 0.05)  # slower after 5 s
            continue
        os.set_blocking(fd, True)
        try:
            os.write(fd, data or b"")  # one write: a pipe takes 64 KiB, a briefing is a few
        except OSError:
            pass
        os.close(fd)
        break
    _settle(pipe, ready, data is not None)
    return fd is not None and data is not None


def _settle(pipe: str, ready: str, have: bool) -> None:
    """The pipe replaced by the briefing (or by an empty file) as a plain file: a later read must not wait."""
    try:
        if have:
            os.replace(ready, pipe)
        else:
            empty = pipe + ".empty"
            os.close(os.open(empty, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600))
            os.replace(empty, pipe)
    except OSError:
        pass


def settle_pipe(pipe: str) -> bool | None:
    """A briefing file left a pipe (its feeder was killed) made a plain file: the briefing composed for it (``True``),
    else an empty one (``False``). ``None``: not a pipe, left as it is."""
    import stat  # (as in write_spec)

    try:
        if not stat.S_ISFIFO(os.lstat(pipe).st_mode):
            return None
        ready = pipe + READY_SUFFIX
        composed = os.path.lexists(ready) and stat.S_ISREG(os.lstat(ready).st_mode)
    except OSError:
        return None
    _settle(pipe, ready, composed)
    return composed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def main(argv: list[str]) -> int:
    gated = len(argv) == 2 and argv[0] == "--await"
    if gated:
        if not _await(argv[1]):
            print(f"pao: no agent was started here ({argv[1]} never came)", file=sys.stderr, flush=True)
            return 127
        argv = argv[1:]
    if len(argv) != 1:
        print("usage: python -I -S launch.py SPEC  or  launch.py --await GATE", file=sys.stderr)
        return 2
    try:
        command, spec_env, briefing = _take_spec(argv[0])
    except OSError as exc:
        print(f"pao: cannot read the launch file {argv[0]}: {exc.strerror}", file=sys.stderr, flush=True)
        return 127
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        print(f"pao: {argv[0]} is not a launch file: {exc}", file=sys.stderr, flush=True)
        return 127
    if gated:
        try:
            os.rmdir(os.path.dirname(argv[0]))  # the gate's own folder, empty now
        except OSError:
            pass
    if briefing is not None:
        _start_feeder(briefing["pipe"], float(briefing["wait"]), briefing["owner"])
    try:
        os.execvpe(command[0], command, with_terminal_identity(spec_env, os.environ))
    except OSError as exc:
        print(f"pao: cannot start {command[0]}: {exc.strerror}", file=sys.stderr, flush=True)
        return 127
    return 0  # not reached: exec replaced this process


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
