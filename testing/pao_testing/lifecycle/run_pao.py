"""``python run_pao.py ARGS...``: the real ``pao`` CLI with the fake host plugin registered.

Lets tests run several ``pao`` processes at once (the registry's concurrency) with a
host agent that exists on every machine.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from pao_testing.lifecycle.fake_host import FakeHostPlugin  # noqa: E402

from pao_core.cli import main  # noqa: E402
from pao_core.plugins import get_plugins  # noqa: E402

if __name__ == "__main__":
    get_plugins().manager.register(FakeHostPlugin(), name="fake-host")
    sys.exit(main(sys.argv[1:]))
