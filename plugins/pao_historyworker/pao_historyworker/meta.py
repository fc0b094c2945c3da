"""The index's ``meta`` table: what the indexer and the vector writer both read and bump."""

from __future__ import annotations

import sqlite3


def meta_value(conn: sqlite3.Connection, key: str) -> str | None:
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return row[0] if row else None


def bump_generation(conn: sqlite3.Connection) -> None:
    """Mark the index as changed, so searching processes reload what they cached of it."""
    with conn:
        conn.execute(
            "INSERT INTO meta(key, value) VALUES ('generation', '1')"
            " ON CONFLICT(key) DO UPDATE SET value = CAST(value AS INTEGER) + 1"
        )
