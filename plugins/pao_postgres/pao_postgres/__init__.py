"""pao plugin: Longterm memory backend: PostgreSQL full-text search, embedded SQLite default."""
