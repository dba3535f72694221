"""Throwaway databases on the local stack's PostgreSQL, for tests and benchmarks."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg2
from psycopg2 import sql
from psycopg2.extensions import make_dsn, parse_dsn


@contextmanager
def scratch_database(server_dsn: str, *, prefix: str) -> Iterator[str]:
    """Create ``<prefix>_<random hex>`` on the server of ``server_dsn`` and yield its DSN;
    the database is dropped (``WITH (FORCE)``: open sessions are ended) when the block
    ends, also when it raised."""
    name = f"{prefix}_{uuid.uuid4().hex[:16]}"
    admin = psycopg2.connect(server_dsn)
    admin.autocommit = True
    try:
        with admin.cursor() as cur:
            cur.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        try:
            yield make_dsn(**{**parse_dsn(server_dsn), "dbname": name})
        finally:
            with admin.cursor() as cur:
                cur.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))
    finally:
        admin.close()
