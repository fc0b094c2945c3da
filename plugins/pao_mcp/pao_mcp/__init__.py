"""pao-mcp: ``pao mcp``, the memory tools of a spawned agent's session (see docs/mcp.md)."""

__version__ = "0.1.0"
SERVER_NAME = "pao"
"""The server's name in a session's MCP configuration (its tools: ``mcp__pao__search_memory`` in Claude Code)."""
