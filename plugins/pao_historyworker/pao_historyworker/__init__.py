"""pao plugin: Conversation-history memory backend: JSON-RPC over HTTP client, local transcript index."""
