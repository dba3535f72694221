"""The PostgreSQL epoch ledger: migrations, the epoch state machine, reservation, CLI."""

from __future__ import annotations

from airflow_provider_eo.ledger.errors import (
    CursorBeyondHighWatermark,
    DataLossError,
    EpochNotFound,
    FencedOut,
    IllegalTransition,
    InvalidRanges,
    LedgerError,
    LedgerUnavailable,
    OpenEpochConflict,
)
from airflow_provider_eo.ledger.ledger import Ledger
from airflow_provider_eo.ledger.models import DeadLetter, Epoch, PartitionRange
from airflow_provider_eo.ledger.offsets import OffsetPublisher, OffsetSource, TopicPartition
from airflow_provider_eo.ledger.states import ALLOWED_TRANSITIONS, EpochKind, EpochState

__all__ = [
    "ALLOWED_TRANSITIONS",
    "CursorBeyondHighWatermark",
    "DataLossError",
    "DeadLetter",
    "Epoch",
    "EpochKind",
    "EpochNotFound",
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
