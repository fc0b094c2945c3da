"""A hostile folder: a cloned repository whose files run code if anything pao starts there imports or runs them.

Every trap writes a file named after itself into a marker folder outside the repository,
so a test proves nothing ran by finding that folder empty.
"""

from __future__ import annotations

import os
from pathlib import Path

PYTHON_TRAPS = ("typing.py", "secrets.py", "sitecustomize.py", "usercustomize.py", "json.py", "enum.py", "re.py",
                "argparse.py", "asyncio.py", "pao_core/__init__.py", "pao_mcp/__init__.py", "mcp/__init__.py",
                "startup.py")
"""Modules a Python started in the folder (or with it on ``PYTHONPATH``) would import; ``startup.py`` is the
folder's ``PYTHONSTARTUP``."""
PROGRAM_TRAPS = ("tr", "date", "grep", "head", "printf", "cat", "sh", "git", "env.sh")
"""Programs a shell started in the folder would find through a relative ``PATH`` entry; ``env.sh`` is the
folder's ``BASH_ENV``/``ENV``."""


def hostile_folder(folder: Path, markers: Path) -> Path:
    """Fill ``folder`` with every trap; each writes ``markers/<its name>`` when it runs. Returns ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    markers.mkdir(parents=True, exist_ok=True)
    for name in PYTHON_TRAPS:
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        marker = markers / name.replace("/", "_")
        path.write_text(f"open({str(marker)!r}, 'w').close()\n", encoding="utf-8")
    for name in PROGRAM_TRAPS:
        path = folder / name
        path.write_text(f"#!/bin/sh\n: > '{markers / name}'\n", encoding="utf-8")
        path.chmod(0o755)
    return folder


def hostile_environment(folder: Path) -> dict[str, str]:
    """What a folder could put into the environment of what starts there: its own paths first."""
    return {"PYTHONPATH": str(folder), "PYTHONSTARTUP": str(folder / "startup.py"), "PYTHONHOME": str(folder),
            "PYTHONUSERBASE": str(folder), "BASH_ENV": str(folder / "env.sh"), "ENV": str(folder / "env.sh"),
            "PATH": f".:{folder}:{os.environ.get('PATH', '/usr/bin:/bin')}"}


def fired(markers: Path) -> list[str]:
    """The traps that ran."""
    return sorted(path.name for path in markers.iterdir()) if markers.exists() else []
