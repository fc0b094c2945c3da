"""The tmux terminal driver: one pao session on a private server, one window per agent.

A target is ``SOCKET:PANE_ID`` (``pao:%3``), so an agent stays reachable when the
configuration changes later. Text goes in through ``load-buffer`` from a private file
and ``paste-buffer -p -d`` (bracketed paste), never through ``send-keys``, which would
read ``;`` and key names in user text as tmux syntax.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import os
import re
import shutil
import subprocess
import tempfile
import time
import uuid
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import attrs

from pao_agents.spec import discard_spec, launcher_argv, write_spec
from pao_agents.spec import TerminalDriver
from pao_core.errors import PaoError, ValidationError
from pao_tmux.panes import NO_SERVER, SOCKET_NAME, USER_DEFAULT_SERVER, socket_args, split_target
from pao_tmux.screens import DEAD_NOTICE

if TYPE_CHECKING:
    import libtmux

DEFAULT_SOCKET = "pao"
MIN_VERSION = (3, 0)
SPAWN_RETRY_SECONDS = 3.0
_KEY_NAME = re.compile(r"^(?:[CMS]-)*[A-Za-z][A-Za-z0-9]{0,15}$")


class TmuxError(PaoError):
    """A tmux command failed; the message says which and why, in one line."""


@attrs.frozen
class TmuxOptions:
    """``[terminals.tmux]``: ``socket`` (``PAO_TMUX_SOCKET``), session name, window size, kill grace (s)."""

    socket: str = DEFAULT_SOCKET
    session: str = "pao"
    width: int = 200
    height: int = 50
    kill_grace: float = 2.0


@attrs.define
class TmuxDriver(TerminalDriver):
    """``pao_agents.spec.TerminalDriver`` for tmux, plus ``pid(target)``."""

    options: TmuxOptions = TmuxOptions()
    name: str = "tmux"
    screen_notices = (DEAD_NOTICE,)

    # -- the protocol ------------------------------------------------------------

    def availability(self) -> str | None:
        for label, value in (("socket", self.options.socket), ("session", self.options.session)):
            if not SOCKET_NAME.match(value):
                return f"[terminals.tmux] {label} {value!r} must match {SOCKET_NAME.pattern}"
        binary = shutil.which("tmux")
        if binary is None:
            return "tmux is not installed (apt-get install tmux, or brew install tmux)"
        if importlib.util.find_spec("libtmux") is None:
            return "libtmux is not installed in pao's environment (pip install libtmux)"
        version = _tmux_version(binary)
        if version is None or version < MIN_VERSION:
            return f"tmux {'.'.join(map(str, MIN_VERSION))} or newer is needed"
        return None

    def version(self) -> str | None:
        """The installed tmux's version (``3.3a``), for ``pao doctor``; ``None`` when there is none."""
        binary = shutil.which("tmux")
        if binary is None:
            return None
        done = subprocess.run([binary, "-V"], capture_output=True, text=True, timeout=10, check=False)
        return done.stdout.strip().removeprefix("tmux ") or None

    def spawn(self, name: str, folder: str, command: Sequence[str], env: Mapping[str, str]) -> str:
        """Start ``command`` in a new window ``name`` with exactly ``env``; return the target.

        The command and environment reach the pane through the core launcher's private
        spec file, never on tmux's command line (see :mod:`pao_agents.launch`).
        """
        spec_path = write_spec(command, env)
        # remain-on-exit in the same command queue as the window's birth: an agent that
        # dies at once still leaves its last screen behind for pao to report.
        # tmux expands #{...} formats in -c: a folder named "a#{S}" would start elsewhere
        start_dir = folder.replace("#", "##")
        window_args = ["-n", name, "-c", start_dir, "-P", "-F", "#{pane_id}", "--", *launcher_argv(spec_path), ";"]
        window_args += ["set-option", "-w", "remain-on-exit", "on"]
        socket = self.options.socket
        try:
            pane_id = self._check(self._new_window(window_args), f"start window {name!r}", socket)[0].strip()
        except BaseException:
            discard_spec(spec_path)
            raise
        return f"{socket}:{pane_id}"

    def paste(self, target: str, text: str) -> None:
        """Paste ``text`` as one bracketed paste (the program sees it as pasted, not typed)."""
        server, pane = self._query_address(target)  # no libtmux: a spawn's task is pasted the moment it may be
        buffer = f"pao-{uuid.uuid4().hex[:12]}"
        fd, path = tempfile.mkstemp(prefix="pao-paste-", suffix=".txt")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(text)
            self._check(_tmux(server, "load-buffer", "-b", buffer, path), "load the paste buffer", server)
            self._check(_tmux(server, "paste-buffer", "-p", "-d", "-b", buffer, "-t", pane), f"paste into {target}", server)
        except TmuxError:
            _tmux(server, "delete-buffer", "-b", buffer)  # paste -d deletes it only on success
            raise
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)

    def press(self, target: str, key: str) -> None:
        """Send one named key (``Enter``, ``Escape``, ``C-c``): never text."""
        if not _KEY_NAME.match(key):
            raise ValidationError(f"{key!r} is not a tmux key name")
        server, pane = self._query_address(target)  # (as in paste)
        self._check(_tmux(server, "send-keys", "-t", pane, key), f"press {key} in {target}", server)

    def read(self, target: str) -> str:
        """The visible screen; for a dead pane, its last output (tmux scrolls it up on exit)."""
        socket, pane = self._query_address(target)
        result = _tmux(socket, "display-message", "-p", "-t", pane, "#{pane_dead}", ";", "capture-pane", "-p", "-t", pane)
        lines = self._check(result, f"read {target}", socket)
        if lines and lines[0] == "1":
            history = self._check(_tmux(socket, "capture-pane", "-p", "-S", "-200", "-t", pane), f"read {target}", socket)
            return "\n".join(line for line in history if line.strip()) + "\n"
        return "\n".join(lines[1:]) + "\n"

    def is_alive(self, target: str) -> bool:
        return self._pane_field(target, "#{pane_dead}") == "0"

    def kill(self, target: str) -> None:
        """End the agent's processes, then close its window; anything already gone is not an error.

        Closing a window only sends SIGHUP, which some CLIs (Gemini CLI's node relaunch)
        survive, so the pane's process tree is terminated first, then killed if it lingers.
        """
        server, pane = self._address(target)
        pid = self.pid(target) if self.is_alive(target) else None
        if pid is not None:
            _end_process_tree(pid, grace=self.options.kill_grace)
        result = server.cmd("kill-window", "-t", pane)
        if result.returncode != 0 and not _gone(result.stderr):
            self._check(result, f"kill {target}", server)

    # -- additions -----------------------------------------------------------------

    def attach(self, target: str) -> None:
        """Show the agent to the user; returns when they detach (prefix, then d).

        Inside pao's own tmux server this switches the current client to the agent's
        pane; anywhere else (a plain terminal, or the user's own tmux) it attaches a
        client to pao's server in this terminal, nested when inside another tmux.
        """
        server, pane = self._address(target)
        socket_path = self._pane_field(target, "#{socket_path}")
        if socket_path is None:
            raise TmuxError(f"cannot attach {target}: its tmux window is gone")
        inside = _same_server(os.environ.get("TMUX", ""), socket_path)
        if not inside and not os.isatty(0):  # a new client reads the terminal on its stdin: said before any change
            raise TmuxError(f"cannot attach {target}: this is not a terminal (run pao attach in one)")
        for command in (("select-window", "-t", pane), ("select-pane", "-t", pane)):
            self._check(server.cmd(*command), f"attach {target}", server)
        if inside:
            argv, env = ["tmux", "-S", socket_path, "switch-client", "-t", pane], None
        else:
            argv = ["tmux", "-S", socket_path, "attach-session", "-t", pane]
            env = {key: value for key, value in os.environ.items() if key != "TMUX"}  # tmux refuses to nest otherwise
        result = subprocess.run(argv, env=env, stderr=subprocess.PIPE, text=True, check=False)
        if result.returncode != 0:
            raise TmuxError(f"cannot attach {target}: tmux: {' '.join(result.stderr.split()) or result.returncode}")

    def pid(self, target: str) -> int | None:
        """The process id of the agent (the launcher execs into it, so it is the pane's pid)."""
        value = self._pane_field(target, "#{pane_pid}")
        return int(value) if value and value.isdigit() else None

    # -- machinery -------------------------------------------------------------------

    def _new_window(self, window_args: list[str]) -> Any:
        """A window in pao's session, making the session (and server) when missing.

        Retried briefly: when the last window closes, the session and then the server
        go away in the background, and a command arriving meanwhile fails. Run as
        libtmux's ``Server.cmd`` runs it, without libtmux (:func:`_tmux`).
        """
        size = ["-x", str(self.options.width), "-y", str(self.options.height)]
        give_up = time.monotonic() + SPAWN_RETRY_SECONDS
        while True:
            result = _tmux(self.options.socket, "new-window", "-t", f"={self.options.session}:", *window_args)
            if result.returncode == 0 or not _missing_session(result.stderr):
                return result
            result = _tmux(self.options.socket, "new-session", "-d", "-s", self.options.session, *size, *window_args)
            if result.returncode == 0 or time.monotonic() > give_up:
                return result
            time.sleep(0.02)

    def _pane_field(self, target: str, fmt: str) -> str | None:
        socket, pane = self._query_address(target)
        result = _tmux(socket, "display-message", "-p", "-t", pane, fmt)
        if result.returncode != 0:
            if _gone(result.stderr):
                return None
            self._check(result, f"inspect {target}", socket)
        return result.stdout[0].strip() if result.stdout else None

    def _server(self, socket: str | None = None) -> libtmux.Server:
        import libtmux  # heavy: loaded on first use, not at start-up

        socket = socket or self.options.socket
        return libtmux.Server() if socket == USER_DEFAULT_SERVER else libtmux.Server(socket_name=socket)

    def _address(self, target: str) -> tuple[libtmux.Server, str]:
        socket, pane = self._query_address(target)
        return self._server(socket), pane

    @staticmethod
    def _query_address(target: str) -> tuple[str, str]:
        parts = split_target(target)
        if parts is None:
            raise ValidationError(f"{target!r} is not a tmux target (SOCKET:%PANE)")
        return parts

    @staticmethod
    def _check(result: Any, doing: str, server: libtmux.Server | str) -> list[str]:
        if result.returncode == 0:
            return list(result.stdout)
        message = " ".join(result.stderr) or f"exit status {result.returncode}"
        if any(marker in message for marker in NO_SERVER):
            socket = server if isinstance(server, str) else server.socket_name or USER_DEFAULT_SERVER
            raise TmuxError(f"cannot {doing}: the tmux server {socket!r} is not running")
        if _gone(result.stderr):
            raise TmuxError(f"cannot {doing}: its tmux window is gone")
        raise TmuxError(f"cannot {doing}: tmux: {message}")


@attrs.frozen
class _Ran:
    """A tmux command's outcome, as libtmux's ``tmux_cmd`` gives it: exit status, output lines, error lines."""

    returncode: int
    stdout: list[str]
    stderr: list[str]


def _tmux(socket: str, *args: str) -> _Ran:
    """One tmux command on server ``socket``, with the standard library alone (as :mod:`pao_tmux.panes` asks).

    A spawn's window and the reads of its screen while the agent starts run without
    libtmux: its import (40-90 ms) would be most of the window's time, and a spawn polls
    the screen on the two cores the agent is starting on (measured: README). (Importing it
    while pao waits for the briefing was measured and dropped: it slowed the briefing's
    helper more than it saved.) Pasting and keys too: a spawn's task is pasted the moment the CLI may take it, and
    the import there was on the way to the task's first request. Kill and attach go through libtmux.
    """
    binary = shutil.which("tmux") or "tmux"
    done = subprocess.run([binary, *socket_args(socket), *args], capture_output=True, text=True, encoding="utf-8",
                          errors="backslashreplace", check=False)
    stdout = done.stdout.split("\n")
    while stdout and stdout[-1] == "":
        stdout.pop()
    return _Ran(done.returncode, stdout, [line for line in done.stderr.split("\n") if line])


def _same_server(tmux_variable: str, socket_path: str) -> bool:
    """Whether ``$TMUX`` (``SOCKET_PATH,PID,SESSION``) names the server at ``socket_path``."""
    inside = tmux_variable.split(",")[0]
    try:
        return bool(inside) and os.path.samefile(inside, socket_path)
    except OSError:
        return False


def _missing_session(stderr: Sequence[str]) -> bool:
    text = " ".join(stderr)
    return "can't find session" in text or "no current target" in text or any(m in text for m in NO_SERVER)


def _gone(stderr: Sequence[str]) -> bool:
    text = " ".join(stderr)
    return "can't find" in text or "no current target" in text or any(marker in text for marker in NO_SERVER)


@functools.cache  # availability is asked more than once a spawn (default terminal, then the chosen one)
def _tmux_version(binary: str) -> tuple[int, int] | None:
    try:
        out = subprocess.run([binary, "-V"], capture_output=True, text=True, timeout=5, check=False).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = re.search(r"(\d+)\.(\d+)", out)
    return (int(match[1]), int(match[2])) if match else None


def _end_process_tree(pid: int, *, grace: float) -> None:
    """SIGTERM a process and its descendants, SIGKILL whatever is left after ``grace`` seconds.

    A process counts as ended once it is a zombie: its parent (the tmux server, or init for the
    orphaned descendants) reaps it when it gets to it, which psutil's ``wait_procs`` would wait
    for, polling up to the whole grace twice (the 3-5.6 s a kill cost). Each round polls every
    few milliseconds until the last one is gone.
    """
    import psutil  # only this path needs it: start-up stays light

    from pao_core.waiting import poll_until  # only this path needs it: start-up stays light

    try:
        root = psutil.Process(pid)
        tree = [root, *root.children(recursive=True)]
    except psutil.Error:
        return
    for signal_all in (psutil.Process.terminate, psutil.Process.kill):
        for process in tree:
            with contextlib.suppress(psutil.Error):
                signal_all(process)
        if poll_until(lambda: not any(_running(process) for process in tree), grace, first=0.002, cap=0.02):
            return


def _running(process: Any) -> bool:
    """Whether ``process`` (the one started, not a reused pid) still runs: not gone, not a zombie."""
    import psutil  # loaded by the caller already

    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False
