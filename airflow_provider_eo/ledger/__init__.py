"""The epoch ledger: the epoch protocol (``protocol.EpochProtocol``, start there), its
PostgreSQL store and migrations (``store.postgres_ledger.Ledger``), the state machine and planning."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from airflow_provider_eo.ledger.model.epoch import DeadLetter, Epoch, PartitionRange
from airflow_provider_eo.ledger.model.offsets import OffsetPublisher, OffsetSource, TopicPartition
from airflow_provider_eo.ledger.model.refusals import (
    CursorBeyondHighWatermark,
    DataLossError,
    EpochNotFound,
    EpochOfAnotherPipeline,
    FencedOut,
    IllegalTransition,
    InvalidRanges,
    LedgerError,
    LedgerUnavailable,
    OpenEpochConflict,
)
from airflow_provider_eo.ledger.model.states import ALLOWED_TRANSITIONS, EpochKind, EpochState

if TYPE_CHECKING:
    from airflow_provider_eo.ledger.protocol.epoch_protocol import EpochProtocol
    from airflow_provider_eo.ledger.store.postgres_ledger import Ledger

__all__ = [
    "ALLOWED_TRANSITIONS",
    "CursorBeyondHighWatermark",
    "DataLossError",
    "DeadLetter",
    "Epoch",
    "EpochKind",
    "EpochNotFound",
    "EpochOfAnotherPipeline",
    "EpochProtocol",
    "EpochState",
    "FencedOut",
    "IllegalTransition",
    "InvalidRanges",
    "Ledger",
    "LedgerError",
    "LedgerUnavailable",
    "OffsetPublisher",
    "OffsetSource",
    "OpenEpochConflict",
    "PartitionRange",
    "TopicPartition",
]

#: Loaded on first use (PEP 562): a Spark executor importing a value of ``ledger/model/``
#: gets neither psycopg2 nor the protocol with it.
_LAZY = {
    "EpochProtocol": "airflow_provider_eo.ledger.protocol.epoch_protocol",
    "Ledger": "airflow_provider_eo.ledger.store.postgres_ledger",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
