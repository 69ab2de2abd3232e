"""Postgres + pgvector: connection, schema and the ledger-backed stages' SQL."""
