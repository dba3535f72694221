"""The epoch ledger: the epoch protocol (``protocol.EpochProtocol``, start there), its
PostgreSQL store and migrations (``store.postgres_ledger.Ledger``), the state machine and planning."""

from __future__ import annotations

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
