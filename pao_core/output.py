"""What commands print, one shape for all (pao's own commands and plugins' alike)."""

from __future__ import annotations

import codecs
import io
import json
import os
import re
import sys
from typing import Any, Sequence

from pao_core.errors import PaoError


_NOT_ASCII = re.compile(r"[^\x20-\x7e\n]")


class OutputClosed(PaoError):
    """Standard output was closed when pao started (``pao list >&-``): what it had to say went nowhere."""


class _ClosedOutput(io.TextIOBase):
    """Stands in for a closed standard output: writing is an error, as for ``ls >&-``, never silence."""

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        if text:
            raise OutputClosed("cannot write the output: standard output is closed")
        return 0


def guard_standard_streams() -> None:
    """Make the three standard streams safe to use, whatever pao was started with.

    A closed descriptor 0, 1 or 2 is opened on the null device, so no file pao opens later
    takes its number (and receives what was meant for the terminal); a closed stdout then
    fails on the first write, a closed stderr swallows the error line (there is nowhere to
    say it), a closed stdin reads as empty. Text the terminal's encoding cannot show is
    replaced (``?``) instead of stopping the command.
    """
    for descriptor in (0, 1, 2):
        try:
            os.fstat(descriptor)
        except OSError:
            null = os.open(os.devnull, os.O_RDWR)
            if null != descriptor:
                os.dup2(null, descriptor)
                os.close(null)
    if sys.stdin is None:
        sys.stdin = open(0, encoding="utf-8", closefd=False)  # noqa: SIM115 (lives as long as the process)
    if sys.stdout is None:
        sys.stdout = _ClosedOutput()
    if sys.stderr is None:
        sys.stderr = open(2, "w", encoding="utf-8", errors="backslashreplace", closefd=False)  # noqa: SIM115
    if isinstance(sys.stdout, io.TextIOWrapper) and sys.stdout.errors == "strict":
        sys.stdout.reconfigure(errors="replace")


def silence_broken_pipe() -> None:
    """After the reader of stdout went away: point stdout at the null device, so that the flush
    at exit does not fail again and print a warning (what `cat` does: end quietly)."""
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):  # not a real file: nothing to flush
        pass


def flush_output(code: Any) -> Any:
    """Flush stdout before the process ends: ``code``, or 141 when the reader went away meanwhile."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        silence_broken_pipe()
        return 141
    return code


def _utf8_output() -> bool:
    try:
        return codecs.lookup(getattr(sys.stdout, "encoding", None) or "utf-8").name == "utf-8"
    except LookupError:
        return False


def print_json(data: Any) -> None:
    """Print ``data`` as JSON on stdout (the shape of every ``--json`` output).

    Lossless and visible: a character that shows nothing (a control, a zero-width or bidi
    character, a Unicode tag) is written as its ``\\u`` escape, and so is every non-ASCII
    character when the terminal's encoding is not UTF-8.
    """
    text = json.dumps(data, indent=2, ensure_ascii=not _utf8_output(), default=str)
    sys.stdout.write(_NOT_ASCII.sub(_escape_invisible, text) + "\n")


def _escape_invisible(match: re.Match[str]) -> str:
    char = match[0]
    return char if char.isprintable() else json.dumps(char)[1:-1]


def plain(value: Any) -> str:
    """``value`` as one line of terminal text: no escape sequence, control, newline or invisible character."""
    text = str(value)
    if text.isprintable():
        return text
    from pao_core.sanitize import strip_controls  # its patterns: only text with something to strip needs them

    return strip_controls(text).replace("\n", " ").replace("\t", " ")


def print_table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """Print rows under a header, each column as wide as its widest cell."""
    cells = [[plain(cell) for cell in row] for row in [header, *rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    for row in cells:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())
