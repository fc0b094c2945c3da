"""One status line for work that can take more than a second: what runs, and for how long.

Drawn on stderr only when it is a terminal (scripts and logs get nothing), by a
daemon thread, so the elapsed time moves even while the work blocks in one call.
"""

from __future__ import annotations

import shutil
import sys
import threading
import time
from typing import IO, Any

CLEAR = "\r\x1b[K"


class Progress:
    """``with Progress("indexing transcripts") as progress: ... progress.update("120 of 3,000 files")``."""

    def __init__(self, label: str, *, stream: IO[str] | None = None, delay: float = 1.0, interval: float = 0.25) -> None:
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self.delay, self.interval = delay, interval
        self.detail = ""
        self.shown = False
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._started = time.monotonic()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> Progress:
        if _is_terminal(self.stream):
            self._thread = threading.Thread(target=self._run, name="pao-progress", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._done.set()
        if self._thread is not None:
            self._thread.join()
        with self._lock:
            if self.shown:
                self.stream.write(CLEAR)
                self.stream.flush()

    def update(self, detail: str) -> None:
        """What the work is at now (``"embedding 120 of 900 exchanges"``)."""
        self.detail = detail

    def say(self, line: str) -> None:
        """Print a line of its own (a step done) without tearing the status line."""
        with self._lock:
            self.stream.write((CLEAR if self.shown else "") + line + "\n")
            if self.shown:
                self._draw()
            self.stream.flush()

    def _run(self) -> None:
        if self._done.wait(self.delay):
            return
        while not self._done.is_set():
            with self._lock:
                self._draw()
                self.stream.flush()
            self._done.wait(self.interval)

    def _draw(self) -> None:
        elapsed = time.monotonic() - self._started
        from pao_core.sanitize import strip_controls  # its patterns: only a line drawn on a terminal needs them

        text = strip_controls(f"{self.label}: {self.detail}" if self.detail else self.label)
        line = f"pao: {text} ({elapsed:.0f} s)"
        width = shutil.get_terminal_size().columns - 1  # a wrapped line could not be redrawn in place
        self.stream.write(CLEAR + (line if len(line) <= width else line[: max(0, width - 1)] + "…"))
        self.shown = True


def _is_terminal(stream: IO[str]) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
