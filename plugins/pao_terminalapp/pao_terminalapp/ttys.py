"""End every process attached to one terminal device (a Terminal.app tab's tty).

Closing a tab whose processes still run makes Terminal.app ask for confirmation, so
``kill`` ends them first: SIGHUP (what closing the tab would send), then SIGKILL for
whatever is still there after the grace period. ``ps -t`` finds them on macOS and Linux.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from typing import Callable

import attrs

from pao_terminalapp.errors import TerminalAppError


SIGKILL_WAIT = 2.0


@attrs.frozen
class PsTtyProcesses:
    """Finds a tty's processes with ``ps -t`` and signals them."""

    ps: str = "ps"
    poll: float = 0.05
    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep

    def pids(self, tty: str) -> list[int]:
        """The processes whose controlling terminal is ``tty`` (``ttys003`` or ``/dev/ttys003``)."""
        try:
            done = subprocess.run(
                [self.ps, "-t", tty.removeprefix("/dev/"), "-o", "pid=,stat="],
                capture_output=True,
                text=True,
                timeout=10,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise TerminalAppError(f"cannot list the processes of {tty} with ps: {exc}") from None
        # ps exits 1 when nothing runs on the tty (or the tty is gone): nothing to end.
        own = os.getpid()
        pids = []
        for line in done.stdout.splitlines():
            fields = line.split()
            # A zombie has ended already; it only waits for its parent to reap it.
            if len(fields) == 2 and fields[0].isdigit() and not fields[1].startswith("Z") and int(fields[0]) != own:
                pids.append(int(fields[0]))
        return pids

    def end(self, tty: str, grace: float) -> list[int]:
        """SIGHUP the tty's processes, SIGKILL the survivors after ``grace`` seconds."""
        pids = self.pids(tty)
        _signal_all(pids, signal.SIGHUP)
        left = self._wait_gone(tty, grace)
        if left:
            _signal_all(left, signal.SIGKILL)
            self._wait_gone(tty, SIGKILL_WAIT)  # delivery takes a moment; the tab closes cleanly after
        return pids

    def _wait_gone(self, tty: str, seconds: float) -> list[int]:
        deadline = self.clock() + seconds
        while (left := self.pids(tty)) and self.clock() < deadline:
            self.sleep(self.poll)
        return left


def _signal_all(pids: list[int], signum: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, signum)
        except ProcessLookupError:
            pass  # ended on its own meanwhile
        except PermissionError as exc:
            raise TerminalAppError(f"cannot end process {pid} on the agent's tty: {exc.strerror}") from None
