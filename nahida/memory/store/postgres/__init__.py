"""The PostgreSQL backend of the store: psycopg 3, a read pool and one writer, tsvector + GIN,
pgvector."""

from nahida.memory.store.postgres.store import PostgresStore, PostgresTx

__all__ = ["PostgresStore", "PostgresTx"]
