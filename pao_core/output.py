"""What commands print, one shape for all (pao's own commands and plugins' alike)."""

from __future__ import annotations

import json
import sys
from typing import Any, Sequence


def print_json(data: Any) -> None:
    """Print ``data`` as JSON on stdout (the shape of every ``--json`` output)."""
    json.dump(data, sys.stdout, indent=2, ensure_ascii=False, default=str)
    sys.stdout.write("\n")


def print_table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """Print rows under a header, each column as wide as its widest cell."""
    cells = [[str(cell) for cell in row] for row in [header, *rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    for row in cells:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())
