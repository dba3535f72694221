"""Epochs by id or by filter, in PostgreSQL: the reads both the protocol's store and the
read model need (``ledger/model/ledger_roles.py``). Each call is one short transaction."""

from __future__ import annotations

from airflow_provider_eo.ledger.model.epoch import Epoch
from airflow_provider_eo.ledger.model.read_model import EpochFilter
from airflow_provider_eo.ledger.model.states import OPEN_STATES, EpochKind
from airflow_provider_eo.ledger.store.connection import OnLedgerConnection
from airflow_provider_eo.ledger.store.epoch_rows import fetch_epoch, fetch_epochs


class PostgresEpochLookup(OnLedgerConnection):
    """Epochs with their ranges, as the ledger holds them now."""

    def get_epoch(self, epoch_id: int) -> Epoch:
        """The epoch with its ranges; raises ``EpochNotFound``."""
        with self._db.transaction() as cur:
            return fetch_epoch(cur, epoch_id)

    def epochs(self, wanted: EpochFilter) -> list[Epoch]:
        """Epochs matching ``wanted`` with their ranges, oldest first, in one transaction
        (with ``wanted.limit``: the newest ``limit`` of them)."""
        with self._db.transaction() as cur:
            return fetch_epochs(cur, wanted)

    def open_epochs(self, pipeline: str, kind: EpochKind | str | None = None) -> list[Epoch]:
        """RESERVED and WRITTEN epochs of ``pipeline`` (of one kind if given), oldest first."""
        wanted = EpochFilter(
            pipeline=pipeline, states=OPEN_STATES, kind=None if kind is None else EpochKind(kind)
        )
        return self.epochs(wanted)
