"""The ``[backends.history]`` options, structured by ``config.options``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal, Mapping

import attrs

BACKEND_NAME = "history"
"""The backend's name, and its table ``[backends.history]``."""
DEFAULT_TOOL = "search_history"
DEFAULT_METHOD = "search"
TOKEN_ENV = "PAO_HISTORY_TOKEN"


@attrs.frozen
class HistoryOptions:
    """How the history backend finds its store.

    No ``url``: search the local SQLite index at ``index`` (default
    ``<PAO_HOME>/history.sqlite3``). With ``url``: speak ``protocol`` to that server.
    ``arguments`` maps pao's fields (``query``, ``limit``) to the tool's argument names.
    ``semantic`` (with the ``embeddings`` extra installed) embeds exchanges at index time
    and fuses vector search with the lexical one; false keeps both lexical only.
    """

    enabled: bool = True
    url: str | None = None
    protocol: Literal["mcp", "jsonrpc"] = "jsonrpc"
    tool: str = DEFAULT_TOOL
    method: str = DEFAULT_METHOD
    arguments: Mapping[str, str] = attrs.field(factory=lambda: {"query": "query", "limit": "limit"})
    token: str | None = None
    header: str = "Authorization"
    index: Path | None = None
    transcripts: Path | None = None
    max_response_bytes: int = 4 * 1024 * 1024
    semantic: bool = True

    def index_path(self, home: Path) -> Path:
        return self.index or home / "history.sqlite3"

    def transcripts_path(self) -> Path:
        return self.transcripts or Path(os.path.expanduser("~")) / ".claude" / "projects"

    def auth_headers(self, environ: Mapping[str, str] | None = None) -> dict[str, str]:
        """The auth header from the config's token, else ``$PAO_HISTORY_TOKEN``; none if neither."""
        env = os.environ if environ is None else environ
        token = self.token or env.get(TOKEN_ENV)
        if not token:
            return {}
        value = f"Bearer {token}" if self.header.lower() == "authorization" else token
        return {self.header: value}
