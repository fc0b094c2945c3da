"""The options of ``pao mcp``, for pao's command line and for ``python -I -m pao_mcp`` (argparse only)."""

from __future__ import annotations

import argparse

AGENT_VARIABLE = "PAO_AGENT_NAME"


def add_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--agent", metavar="NAME", default=None,
        help=f"whose session this is: the provenance of what remember stores (default: ${AGENT_VARIABLE}, else 'user')",
    )
    parser.add_argument("--session-id", metavar="ID", default=None,
                        help="the session's id (default: the one pao's registry has for --agent)")
    parser.add_argument("--remember-to", metavar="STORE", default="longterm",
                        help="the writable memory store remember writes to (default: longterm)")
    parser.add_argument("--env-file", metavar="FILE", default=None,
                        help="a JSON object of PAO_* variables to use (pao spawn writes one, 0600, per agent)")
