"""The longterm store's searches: the search modes, the vectors and cells, provenance, and the warm
searcher that runs the very same search in a background process (:mod:`~pao_postgres.searcher.warm`,
:mod:`~pao_postgres.searcher.server`). One way to the data: a read transaction of plain SQL
(:mod:`pao_postgres.searcher.reading`: ``sqlite3`` for the embedded file, psycopg for a server),
never SQLAlchemy, so the spawn path does not import it. Nothing here imports :mod:`pao_postgres.store`."""
