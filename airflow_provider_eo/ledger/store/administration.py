"""The ledger's administration in PostgreSQL (``LedgerAdministration``,
``ledger/model/ledger_roles.py``): migrations (``eo-ledger migrate``) and retention
(``eo-ledger prune``, ``store/retention.py``)."""

from __future__ import annotations

from collections.abc import Sequence

from airflow_provider_eo.ledger.model.retention_policy import PruneCount, PrunePolicy
from airflow_provider_eo.ledger.store import retention
from airflow_provider_eo.ledger.store.connection import OnLedgerConnection
from airflow_provider_eo.ledger.store.migrate import applied_versions


class PostgresAdministration(OnLedgerConnection):
    """Schema versions and retention over one ``LedgerConnection``."""

    def migrate(self) -> list[int]:
        """Apply pending migrations now; return the versions applied."""
        return self._db.migrate()

    def schema_versions(self) -> list[int]:
        """Migration versions recorded in the database (LedgerUnavailable on connection breaks)."""
        with self._db.connected() as conn:
            return applied_versions(conn)

    def prune_plan(self, pipelines: Sequence[str] | None, policy: PrunePolicy) -> list[PruneCount]:
        """What :meth:`prune` would delete now per pipeline (every pipeline when None),
        sorted by name, read in one transaction; nothing changes. ``LookupError`` names
        unknown pipelines."""
        with self._db.transaction() as cur:
            names = retention.known_pipelines(cur, pipelines)
            return [retention.count_prunable(cur, name, policy) for name in names]

    def prune(
        self, pipelines: Sequence[str] | None, policy: PrunePolicy, *, batch_size: int = 1000
    ) -> list[PruneCount]:
        """Delete settled epochs matching ``policy`` (store/retention.py: open epochs,
        cursors, pins, gaps, dead letters and the epochs these name are kept), in
        transactions of at most ``batch_size`` epochs; what was deleted per pipeline."""
        with self._db.transaction() as cur:
            names = retention.known_pipelines(cur, pipelines)
        return [
            retention.prune_pipeline(self._db.transaction, name, policy, batch_size=batch_size)
            for name in names
        ]
