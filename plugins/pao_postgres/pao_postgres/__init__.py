"""pao plugin: Longterm memory backend: PostgreSQL full-text search, embedded SQLite default."""

BACKEND_NAME = "longterm"
"""The backend's name, and its table ``[backends.longterm]``."""
