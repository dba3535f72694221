"""Versioned SQL migrations of the ledger schema ``eo``.

Migrations are the files ``migrations/NNNN_name.sql`` of this package, applied in
version order. :func:`apply_migrations` runs in ONE transaction that first takes a
transaction-scoped advisory lock, so two processes starting at once serialize: the
second waits, then finds everything applied and does nothing.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from importlib import resources
from typing import Any

log = logging.getLogger(__name__)

#: Advisory lock key of the migration transaction (arbitrary, fixed: "eo-ledger").
MIGRATION_LOCK_KEY = 0x656F_6C65_6467
_FILE_RE = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")


@dataclass(frozen=True)
class Migration:
    """One migration file."""

    version: int
    name: str
    sql: str


def available_migrations() -> list[Migration]:
    """All migrations shipped with the package, ordered by version."""
    found = []
    for entry in (resources.files("airflow_provider_eo.ledger.store") / "migrations").iterdir():
        match = _FILE_RE.match(entry.name)
        if match:
            found.append(Migration(int(match.group(1)), match.group(2), entry.read_text(encoding="utf-8")))
    found.sort(key=lambda migration: migration.version)
    versions = [migration.version for migration in found]
    if len(set(versions)) != len(versions):
        raise RuntimeError(f"duplicate migration versions: {versions}")
    return found


def apply_migrations(conn: Any) -> list[int]:
    """Apply pending migrations on the psycopg2 connection ``conn``; return the versions applied.

    Commits on success, rolls back (nothing applied) on any error. ``conn`` must not be
    in autocommit mode and must have no transaction in progress.
    """
    applied_now: list[int] = []
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK_KEY,))
            cur.execute("CREATE SCHEMA IF NOT EXISTS eo")
            cur.execute(
                "CREATE TABLE IF NOT EXISTS eo.schema_migrations ("
                " version integer PRIMARY KEY,"
                " name text NOT NULL,"
                " applied_at timestamptz NOT NULL DEFAULT now())"
            )
            cur.execute("SELECT version FROM eo.schema_migrations")
            done = {row[0] for row in cur.fetchall()}
            for migration in available_migrations():
                if migration.version in done:
                    continue
                log.info("applying ledger migration %04d_%s", migration.version, migration.name)
                cur.execute(migration.sql)
                cur.execute(
                    "INSERT INTO eo.schema_migrations (version, name) VALUES (%s, %s)",
                    (migration.version, migration.name),
                )
                applied_now.append(migration.version)
        conn.commit()
    except BaseException:
        conn.rollback()
        raise
    return applied_now


def applied_versions(conn: Any) -> list[int]:
    """Versions recorded in ``eo.schema_migrations`` (empty if the schema is absent)."""
    with conn.cursor() as cur:
        cur.execute("SELECT to_regclass('eo.schema_migrations') IS NOT NULL")
        row = cur.fetchone()
        if not row or not row[0]:
            conn.rollback()
            return []
        cur.execute("SELECT version FROM eo.schema_migrations ORDER BY version")
        versions = [int(r[0]) for r in cur.fetchall()]
    conn.rollback()
    return versions
