"""One progress display (every pao command's) for work that can take more than a second: what runs, how far it got, how
fast it goes and how long is left.

On a terminal (stderr) one status line is redrawn in place by rich, from a second after the start;
its numbers always fit: at 80 columns the label is cut, never the counter, rate or time left.
Elsewhere (a pipe, a log) the line of counted work is printed plainly every :data:`PLAIN_EVERY_S`
seconds, and once at the end when any was. Numbers have one format everywhere (:func:`number`, :func:`duration`).
"""

from __future__ import annotations

import sys
import threading
import time
from typing import IO, Any

PLAIN_EVERY_S = 10.0
"""How often a stream that is not a terminal gets a progress line."""
RATE_WINDOW_S = 30.0
"""The rate (and so the time left) is of the last this many seconds: work whose pace changes is
estimated by its recent pace."""


def number(value: float) -> str:
    """``20,000``; ``51.3`` below 100 (a rate), whole numbers from there."""
    if float(value).is_integer() or abs(value) >= 100:
        return f"{round(value):,}"
    return f"{value:,.1f}"


def duration(seconds: float) -> str:
    """``0.4 s``, ``42 s``, ``5 min 42 s``, ``1 h 05 min``."""
    if seconds < 0.95:
        return f"{max(0.0, seconds):.1f} s"
    whole = round(seconds)
    if whole < 60:
        return f"{whole} s"
    if whole < 3600:
        return f"{whole // 60} min {whole % 60:02d} s"
    return f"{whole // 3600} h {whole % 3600 // 60:02d} min"


class Progress:
    """``with Progress("embedding observations") as progress: progress.count(done, total, "observations")``;
    ``progress.update("waiting until the agent is ready")`` for work without a count."""

    def __init__(self, label: str, *, stream: IO[str] | None = None, delay: float = 1.0, interval: float = 0.25,
                 plain_every: float = PLAIN_EVERY_S) -> None:
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self.delay, self.interval, self.plain_every = delay, interval, plain_every
        self.detail = ""
        self.shown = False
        self.terminal = _is_terminal(self.stream)
        self._counted: tuple[int, int | None, str] | None = None
        self._samples: list[tuple[float, int]] = []
        self._lock = threading.RLock()
        self._done = threading.Event()
        self._started = time.monotonic()
        self._plain_at = self._started + delay - plain_every  # the first plain line once the delay is over
        self._thread: threading.Thread | None = None
        self._live: Any = None
        self._plain_line = ""

    def __enter__(self) -> Progress:
        if self.terminal:
            self._thread = threading.Thread(target=self._run, name="pao-progress", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._done.set()
        if self._thread is not None:
            self._thread.join()
        with self._lock:
            if self._live is not None:
                self._live.stop()  # transient: the status line is wiped
            elif self.shown and not self.terminal:
                self._write_plain(self.line())

    def update(self, detail: str) -> None:
        """What the work is at now (``"waiting until the agent is ready"``), without a count."""
        self.detail = detail
        self._counted = None  # a line without numbers: on a terminal only (a spawn's log stays its own lines)

    def count(self, done: int, total: int | None = None, unit: str = "") -> None:
        """How far the work got: ``done`` of ``total`` ``unit`` (the rate and time left follow)."""
        now = time.monotonic()
        with self._lock:
            if self._counted is None or self._counted[1:] != (total, unit) or done < self._counted[0]:
                self._samples = []  # another phase: its own rate
            self._counted = (done, total, unit)
            self._samples.append((now, done))
            while len(self._samples) > 2 and now - self._samples[1][0] > RATE_WINDOW_S:
                self._samples.pop(0)
        self._maybe_plain()

    def say(self, line: str) -> None:
        """Print a line of its own (a step done) without tearing the status line."""
        with self._lock:
            if self._live is not None:
                self._live.console.print(line, markup=False, highlight=False, soft_wrap=True)
            else:
                self.stream.write(line + "\n")
                self.stream.flush()

    def line(self, width: int | None = None) -> str:
        """The status line; with ``width``, the label cut so the numbers fit in it."""
        from pao_core.sanitize import strip_controls  # its patterns: only a line that is shown needs them

        elapsed = time.monotonic() - self._started
        if self._counted is None:
            head, numbers = f"pao: {self.label}" + (f": {self.detail}" if self.detail else ""), f" ({duration(elapsed)})"
        else:
            head, numbers = f"pao: {self.label}", ": " + self._numbers()
        head, numbers = strip_controls(head), strip_controls(numbers)
        if width is not None and len(head) + len(numbers) > width:
            room = max(0, width - len(numbers) - 1)
            head = head[:room] + "…" if room else ""
            numbers = numbers[: width - len(head)]
        return head + numbers

    def _numbers(self) -> str:
        done, total, unit = self._counted or (0, None, "")
        said = f"{number(done)} of {number(total)}" if total is not None else number(done)
        said += f" {unit}" if unit else ""
        if total:
            said += f" ({100 * done // total}%)"
        rate = self._rate()
        if rate is not None:
            said += f", {number(rate)}/s"
            if total is not None and rate > 0:
                said += f", {duration((total - done) / rate)} left"
        return said

    def _rate(self) -> float | None:
        with self._lock:
            if len(self._samples) < 2 or self._samples[-1][0] - self._samples[0][0] < 0.5:
                return None
            (first_at, first), (last_at, last) = self._samples[0], self._samples[-1]
        return (last - first) / (last_at - first_at)

    def _maybe_plain(self) -> None:
        """A stream that is not a terminal: the line every ``plain_every`` seconds, from ``delay`` on."""
        if self.terminal:
            return
        now = time.monotonic()
        if now - self._started < self.delay or now - self._plain_at < self.plain_every:
            return
        self._plain_at = now
        with self._lock:
            self._write_plain(self.line())

    def _write_plain(self, line: str) -> None:
        if line != self._plain_line:
            self.stream.write(line + "\n")
            self.stream.flush()
        self._plain_line, self.shown = line, True

    def _run(self) -> None:
        if self._done.wait(self.delay):
            return
        from rich.console import Console  # the display: loaded only once work runs longer than the delay
        from rich.live import Live

        console = Console(file=self.stream, highlight=False, soft_wrap=False)
        live = Live(_Line(self), console=console, refresh_per_second=max(1.0, 1 / self.interval), transient=True,
                    redirect_stdout=False, redirect_stderr=False)
        with self._lock:
            if self._done.is_set():
                return
            live.start()
            self._live, self.shown = live, True


class _Line:
    """The status line as rich draws it: as wide as the terminal allows, numbers kept."""

    def __init__(self, progress: Progress) -> None:
        self.progress = progress

    def __rich_console__(self, console: Any, options: Any) -> Any:
        from rich.text import Text  # loaded with the display, once work runs longer than its delay

        yield Text(self.progress.line(options.max_width - 1), no_wrap=True, overflow="crop")


def _is_terminal(stream: IO[str]) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
