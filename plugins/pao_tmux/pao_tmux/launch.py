"""Start an agent inside its tmux pane: ``python -I -S .../pao_tmux/launch.py SPEC``.

SPEC is a private (0600) JSON file ``{"argv": [...], "env": {...}}`` written by the
driver; it is read and deleted at once, then the agent replaces this process. This way
neither the command's words nor the environment (which may hold API keys) ever pass
through tmux's command line, its shell, or a server started with another environment.
It uses the standard library only: it runs without ``site`` to start fast.
"""

from __future__ import annotations

import json
import os
import sys

# tmux sets these for the pane itself; the spawning process's values would be wrong here.
PANE_OWN = ("TERM", "TMUX", "TMUX_PANE")


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -I -S launch.py SPEC", file=sys.stderr)
        return 2
    try:
        with open(argv[0], encoding="utf-8") as handle:
            spec = json.load(handle)
    finally:
        try:
            os.unlink(argv[0])
        except FileNotFoundError:
            pass
    env = {str(k): str(v) for k, v in spec["env"].items()}
    for key in PANE_OWN:
        if key in os.environ:
            env[key] = os.environ[key]
    command = [str(word) for word in spec["argv"]]
    try:
        os.execvpe(command[0], command, env)
    except OSError as exc:
        print(f"pao: cannot start {command[0]}: {exc.strerror}", file=sys.stderr, flush=True)
        return 127
    return 0  # not reached: exec replaced this process


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
