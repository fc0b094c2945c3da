"""The monitor is tested against real agents: the fake agent and tmux fixtures of ``tests/lifecycle_support``."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "tests"))
