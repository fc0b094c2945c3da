"""pao-mcp: ``pao mcp``, the memory tools of a spawned agent's session (see docs/mcp.md)."""

__version__ = "0.1.0"
