"""pao plugin: Longterm memory backend: PostgreSQL full-text search, embedded SQLite default."""

BACKEND_NAME = "longterm"
"""The backend's name, and its table ``[backends.longterm]``."""


def before_brief(argv: list[str]) -> None:
    """``pao brief``'s ``pao_ahead``: the vector searches' helper, when this store's are searched here."""
    from pao_embeddings.ahead import before_brief  # the first thing ``pao brief`` imports: here, nothing else

    before_brief(argv, BACKEND_NAME, "PAO_POSTGRES_URL")
