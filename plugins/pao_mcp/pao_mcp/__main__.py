"""``python -I -m pao_mcp ARGS``: ``pao mcp ARGS`` as a CLI starts it for a session (docs/mcp.md).

The CLI starts the server in the agent's folder, which may be a cloned repository:
``-I`` keeps that folder (and ``PYTHONPATH``, ``PYTHONSTARTUP``, the user's site
folder) off the interpreter, and the first thing the server does is leave the folder,
so nothing it opens by a relative name can come from there. It then answers the
handshake before pao's command line, configuration or plugins load (``pao_mcp.start``).
"""

import os
import sys

os.chdir("/")

from pao_mcp.start import main  # noqa: E402 - only once out of the agent's folder

sys.exit(main(sys.argv[1:]))
