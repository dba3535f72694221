"""Ledger migrations: applied once, in order, safely when several processes start at once."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import psycopg2
import pytest

from airflow_provider_eo.ledger import Ledger
from airflow_provider_eo.ledger.store.migrate import applied_versions, apply_migrations, available_migrations
from tests.conftest import StackInfo
from tests.integration.ledger_support import fresh_database

pytestmark = pytest.mark.integration

SHIPPED = [
    (1, "initial"),
    (2, "stored_cursors"),
    (3, "operator_abort"),
    (4, "operations"),
    (5, "epoch_observations"),
    (6, "pipeline_specs"),
    (7, "audits"),
]


def migration_rows(dsn: str) -> list[tuple[int, str]]:
    with psycopg2.connect(dsn) as conn, conn.cursor() as cur:
        cur.execute("SELECT version, name FROM eo.schema_migrations ORDER BY version")
        rows = [tuple(row) for row in cur.fetchall()]
    conn.close()
    return rows


def test_shipped_migrations_are_ordered() -> None:
    assert [(m.version, m.name) for m in available_migrations()] == SHIPPED


def test_migrating_twice_applies_once(stack: StackInfo) -> None:
    with fresh_database(stack.ledger_dsn) as dsn:
        conn = psycopg2.connect(dsn)
        try:
            assert applied_versions(conn) == []
            assert apply_migrations(conn) == [1, 2, 3, 4, 5, 6, 7]
            assert apply_migrations(conn) == []
            assert applied_versions(conn) == [1, 2, 3, 4, 5, 6, 7]
        finally:
            conn.close()
        assert migration_rows(dsn) == SHIPPED


def test_concurrent_migrations_are_safe(stack: StackInfo) -> None:
    with fresh_database(stack.ledger_dsn) as dsn:
        barrier = threading.Barrier(4, timeout=30)

        def migrate() -> list[int]:
            conn = psycopg2.connect(dsn)
            try:
                barrier.wait()
                return apply_migrations(conn)
            finally:
                conn.close()

        with ThreadPoolExecutor(max_workers=4) as pool:
            results = sorted(pool.map(lambda _: migrate(), range(4)))
        assert results == [[], [], [], [1, 2, 3, 4, 5, 6, 7]]
        assert migration_rows(dsn) == SHIPPED


def test_ledger_migrates_on_first_use(stack: StackInfo) -> None:
    with fresh_database(stack.ledger_dsn) as dsn:
        ledgers = [Ledger(dsn), Ledger(dsn)]
        with ThreadPoolExecutor(max_workers=2) as pool:
            assert list(pool.map(lambda ledger: ledger.list_pipelines(), ledgers)) == [[], []]
        for ledger in ledgers:
            ledger.close()
        assert migration_rows(dsn) == SHIPPED
