"""pao-mcp: ``pao mcp``, the memory tools of a spawned agent's session (see docs/mcp.md)."""
