"""Vectors already computed, found again by their token ids.

Re-importing a memory file, re-indexing history after a recipe change, or loading
the same corpus into another store (``pao eval``, the tests) embeds only text it has
not seen: a vector is stored under a hash of the token ids the model read, so the
same ids always give the same vector. The file lives beside the prepared weights
(``0600``, its folder ``0700``) and is named after them, so another model never reads
it. Any failure of the cache (locked, full disk, corrupt) costs only the time saved.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from array import array
from pathlib import Path
from typing import Iterable, Sequence


def key(ids: Sequence[int]) -> bytes:
    import hashlib  # batches only: the encoder of one topic (pao brief's helper) never needs OpenSSL loaded

    return hashlib.blake2b(array("I", ids).tobytes(), digest_size=16).digest()


class VectorCache:
    def __init__(self, path: Path) -> None:
        self.path = path

    def _connect(self) -> sqlite3.Connection:
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not self.path.exists():
            os.close(os.open(self.path, os.O_CREAT | os.O_WRONLY, 0o600))
        conn = sqlite3.connect(self.path, timeout=2.0, isolation_level=None)
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("CREATE TABLE IF NOT EXISTS vectors (key BLOB PRIMARY KEY, vector BLOB NOT NULL) WITHOUT ROWID")
        return conn

    def lookup(self, keys: Sequence[bytes]) -> dict[bytes, bytes]:
        found: dict[bytes, bytes] = {}
        with contextlib.suppress(sqlite3.Error, OSError), contextlib.closing(self._connect()) as conn:
            for start in range(0, len(keys), 500):
                chunk = list(keys[start : start + 500])
                marks = ",".join("?" * len(chunk))
                found.update(conn.execute(f"SELECT key, vector FROM vectors WHERE key IN ({marks})", chunk).fetchall())
        return found

    def store(self, pairs: Iterable[tuple[bytes, bytes]]) -> None:
        with contextlib.suppress(sqlite3.Error, OSError), contextlib.closing(self._connect()) as conn:
            with conn:
                conn.executemany("INSERT OR IGNORE INTO vectors (key, vector) VALUES (?, ?)", list(pairs))
