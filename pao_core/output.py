"""What commands print, one shape for all (pao's own commands and plugins' alike)."""

from __future__ import annotations

import io
import json
import os
import sys
from typing import Any, Sequence

from pao_core.errors import PaoError


def guard_standard_streams() -> None:
    """Closed descriptors 0-2 opened on the null device, so no file pao opens takes their number; a closed
    stdout is an error (``ls >&-`` says so too), a closed stderr swallows it, a closed stdin reads as empty."""
    for descriptor in (0, 1, 2):
        try:
            os.fstat(descriptor)
        except OSError:
            os.open(os.devnull, os.O_RDWR)  # the lowest free number: this one, the ones below are open
    sys.stdin = sys.stdin or open(0, encoding="utf-8", closefd=False)  # noqa: SIM115 (as long as the process)
    sys.stderr = sys.stderr or open(2, "w", encoding="utf-8", errors="backslashreplace", closefd=False)  # noqa: SIM115
    if sys.stdout is None:
        raise PaoError("cannot write the output: standard output is closed")
    if isinstance(sys.stdout, io.TextIOWrapper) and sys.stdout.errors == "strict":
        sys.stdout.reconfigure(errors="replace")  # what the terminal's encoding cannot show: "?", not a traceback


def end_output(code: Any) -> Any:
    """``code`` once stdout is flushed; 141, quietly (as ``cat``), when its reader went away."""
    try:
        sys.stdout.flush()
        return code
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # so the flush at exit fails no more
        return 141


json_printed = False
"""Whether this process printed its ``--json`` object (a failure after it adds no second one)."""


def print_json(data: Any) -> None:
    """Print ``data`` as JSON on stdout (the shape of every ``--json`` output); an invisible character
    as its visible ``\\u`` escape, and any non-ASCII one where the terminal's encoding is not UTF-8."""
    text = json.dumps(data, indent=2, ensure_ascii="utf" not in (getattr(sys.stdout, "encoding", "") or "utf").lower(),
                      default=str)
    if not text.isascii():
        from pao_core.sanitize import INVISIBLE  # its patterns: only non-ASCII output needs them

        text = INVISIBLE.sub(lambda match: json.dumps(match[0])[1:-1], text)
    sys.stdout.write(text + "\n")
    global json_printed
    json_printed = True


def plain(value: Any) -> str:
    """``value`` as one line for a terminal: no escape sequence, control, newline or invisible character."""
    text = str(value)
    if text.isascii() and text.isprintable():
        return text
    from pao_core.sanitize import strip_controls  # its patterns: only text with something to strip needs them

    return strip_controls(text).replace("\n", " ").replace("\t", " ")


def print_table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """Print rows under a header, each column as wide as its widest cell."""
    cells = [[plain(cell) for cell in row] for row in [header, *rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    for row in cells:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())
