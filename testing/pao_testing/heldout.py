"""Held-out CLI versions: the real-CLI tests run against versions pao was not pinned to, when asked.

``PAO_HELDOUT_CLIS`` names them as ``NAME@VERSION`` words (NAME: ``claude-code``, ``codex``, ``gemini``), e.g.
``claude-code@2.1.331 codex@0.169.1``. A CLI it names is tested at those versions instead of its pins, and every
Claude Code test runs once per named version (not only the newest). Each is looked up in ``PAO_HELDOUT_DIR``
(default ``.heldout-clis`` in the repository, where ``scripts/heldout`` installs them), then in ``.cache``
(the pins). Unset, nothing changes: the default run needs only what ``scripts/setup --test`` installed.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Mapping

REPO_ROOT = Path(__file__).resolve().parents[2]
NAMES = ("claude-code", "codex", "gemini")


def heldout_versions(name: str, environ: Mapping[str, str] | None = None) -> list[str]:
    """The held-out versions ``PAO_HELDOUT_CLIS`` names for CLI ``name`` (empty: test its pins)."""
    env = os.environ if environ is None else environ
    words = env.get("PAO_HELDOUT_CLIS", "").split()
    unknown = [word for word in words if word.partition("@")[0] not in NAMES or not word.partition("@")[2]]
    if unknown:
        raise ValueError(f"PAO_HELDOUT_CLIS: {' '.join(unknown)} is not NAME@VERSION with NAME one of {', '.join(NAMES)}")
    return [word.partition("@")[2] for word in words if word.partition("@")[0] == name]


def install_roots(name: str, environ: Mapping[str, str] | None = None) -> list[Path]:
    """Where versions of CLI ``name`` are installed (``ROOT/VERSION/node_modules/.bin/``), held-out ones first."""
    env = os.environ if environ is None else environ
    heldout = Path(env.get("PAO_HELDOUT_DIR") or REPO_ROOT / ".heldout-clis")
    return [heldout / name, REPO_ROOT / ".cache" / name]


def installed_binary(name: str, version: str, binary: str) -> Path:
    """The ``binary`` of ``name``'s ``version``: the first install root that has it (else the pins' path)."""
    candidates = [root / version / "node_modules" / ".bin" / binary for root in install_roots(name)]
    return next((path for path in candidates if path.exists()), candidates[-1])
