"""``python pao_with_notes.py ARGS...``: the real ``pao`` CLI with the pao-notes example backend registered.

The notes backend (docs/examples/pao-notes) reads ``~/notes.md``: a memory store
that exists on every machine, so a marker in it exists only in memory.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "docs" / "examples" / "pao-notes"))

import pao_notes  # noqa: E402

from pao_core.cli import main  # noqa: E402
from pao_core.plugins import get_plugins  # noqa: E402

if __name__ == "__main__":
    get_plugins().manager.register(pao_notes, name="notes")
    sys.exit(main(sys.argv[1:]))
