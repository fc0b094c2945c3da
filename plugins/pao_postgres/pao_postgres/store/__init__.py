"""The longterm store's writes: schema, import, add, remember, forget, review, statistics, the MCP
memory file's sync and the observations' vectors. One way to the data: SQLAlchemy
(:mod:`pao_postgres.store.engine`, engines per URL, disposed by the store's close step).
The searches of the store are the searcher's (:mod:`pao_postgres.searcher`)."""
