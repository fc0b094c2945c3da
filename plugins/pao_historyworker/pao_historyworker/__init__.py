"""pao plugin: Conversation-history memory backend: JSON-RPC over HTTP client, local transcript index."""


def before_brief(argv: list[str]) -> None:
    """``pao brief``'s ``pao_ahead``: the vector searches' helper, when this store's are searched here."""
    from pao_embeddings.ahead import before_brief  # the first thing ``pao brief`` imports: here, nothing else

    before_brief(argv, "history", "PAO_HISTORY_URL")
