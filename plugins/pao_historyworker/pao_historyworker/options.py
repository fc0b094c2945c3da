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
TOKEN_FILE = "history-token"
"""Under PAO_HOME, 0600: the bearer token ``pao history serve`` requires and local clients send."""


@attrs.frozen
class HistoryOptions:
    """How the history backend finds its store.

    No ``url``: search the local SQLite index at ``index`` (default
    ``<PAO_HOME>/history.sqlite3``). With ``url``: speak ``protocol`` to that server.
    ``arguments`` maps pao's fields (``query``, ``limit``) to the tool's argument names.
    ``semantic`` (with the ``embeddings`` extra installed) embeds exchanges at index time
    and fuses vector search with the lexical one; false keeps both lexical only.
    ``refresh_seconds``: the longest a search of the local index spends indexing new and
    grown transcripts of ``transcripts`` first (at most 40% of the search's time left);
    0 turns it off. ``background_embedding``: what such a search indexed (and what did not
    fit its bound) is indexed and embedded by ``pao history index`` in a background process
    once the search is over (:mod:`pao_embeddings.later`; ``$PAO_BACKGROUND_EMBEDDING=0``
    turns it off too).
    """

    enabled: bool = True
    url: str | None = None
    protocol: Literal["mcp", "jsonrpc"] = "jsonrpc"
    tool: str = DEFAULT_TOOL
    method: str = DEFAULT_METHOD
    arguments: Mapping[str, str] = attrs.field(factory=lambda: {"query": "query", "limit": "limit"})
    token: str | None = None
    token_file: Path | None = None
    header: str = "Authorization"
    index: Path | None = None
    transcripts: Path | None = None
    max_response_bytes: int = 4 * 1024 * 1024
    semantic: bool = True
    refresh_seconds: float = attrs.field(default=0.5, validator=attrs.validators.ge(0))
    background_embedding: bool = True

    def index_path(self, home: Path) -> Path:
        return self.index or home / "history.sqlite3"

    def transcripts_path(self) -> Path:
        return self.transcripts or Path(os.path.expanduser("~")) / ".claude" / "projects"

    def token_path(self, home: Path) -> Path:
        return self.token_file or home / TOKEN_FILE

    def auth_headers(self, environ: Mapping[str, str] | None = None) -> dict[str, str]:
        """The auth header from the config's token, else ``$PAO_HISTORY_TOKEN``, else the token
        file (``token_file``); none if none of them."""
        env = os.environ if environ is None else environ
        token = self.token or env.get(TOKEN_ENV) or _read_token(self.token_file)
        if not token:
            return {}
        value = f"Bearer {token}" if self.header.lower() == "authorization" else token
        return {self.header: value}


def _read_token(path: Path | None) -> str | None:
    if path is None:
        return None
    try:
        return path.read_text(encoding="utf-8").strip() or None
    except (OSError, UnicodeDecodeError):
        return None


def ensure_token(path: Path) -> str:
    """The token in ``path``, made (random, 0600) when there is none; a file others can read is tightened."""
    from pao_core.files import PRIVATE_FILE, private_dir  # not needed until this runs: start-up stays light

    private_dir(path.parent)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE)
    except FileExistsError:
        if path.stat().st_mode & 0o077:
            os.chmod(path, PRIVATE_FILE)
        token = _read_token(path)
        if token is None:
            raise ValueError(f"{path} holds no token; remove it to let pao make one") from None
        return token
    import secrets  # hmac and OpenSSL: only a new token needs them, not loading the plugin

    token = secrets.token_urlsafe(32)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(token + "\n")
    return token
