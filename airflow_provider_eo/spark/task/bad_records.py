"""Bad-record policy inside a write task.

* ``fail``: the first bad record raises :class:`BadRecordError` naming topic,
  partition, offset and reason; the task fails and the epoch is not voted.
* ``dead_letter``: the record (raw key, value and headers, with topic,
  partition, offset, epoch id and the reason) goes to the ledger's
  ``eo.dead_letters`` table via ``PostgresDeadLetters.record_dead_letters`` (an idempotent
  upsert keyed by pipeline/topic/partition/offset, so replays overwrite), and
  is counted. Rows are buffered up to ``flush_every`` rows or ``flush_bytes`` bytes of
  raw key and value, and flushed by :meth:`flush` (the task flushes before it reports
  success).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, get_args

from airflow_provider_eo.config.specs import BadRecordPolicy
from airflow_provider_eo.errors import RecordError
from airflow_provider_eo.ledger.model.epoch import DeadLetter
from airflow_provider_eo.spark.records import KafkaRecord

if TYPE_CHECKING:
    from airflow_provider_eo.ledger.store.postgres_ledger import PostgresDeadLetters

log = logging.getLogger(__name__)

DeadLetterSink = Callable[[list[DeadLetter]], None]


class BadRecordError(RecordError, RuntimeError):
    """A bad record under the ``fail`` policy."""


class BadRecordHandler:
    """Applies one pipeline's bad-record policy; ``count`` is the number of bad records seen."""

    def __init__(
        self,
        pipeline: str,
        epoch_id: int,
        policy: BadRecordPolicy,
        sink: DeadLetterSink,
        flush_every: int = 1000,
        flush_bytes: int | None = None,
    ) -> None:
        if policy not in get_args(BadRecordPolicy):
            raise ValueError(f"unknown bad_records policy {policy!r}")
        self.pipeline = pipeline
        self.epoch_id = epoch_id
        self.policy = policy
        self.sink = sink
        self.flush_every = max(1, flush_every)
        self.flush_bytes = flush_bytes
        self.pending: list[DeadLetter] = []
        self.pending_bytes = 0
        self.count = 0

    def handle(
        self,
        record: KafkaRecord,
        reason: str,
        *,
        error_class: str | None = None,
        schema_id: int | None = None,
    ) -> None:
        """Fail (policy ``fail``) or buffer a dead letter (policy ``dead_letter``) carrying
        ``error_class`` (the rejecting exception's class name), the record's timestamp and
        ``schema_id`` (its Schema Registry id, None when it has none or none was readable)."""
        where = f"topic {record.topic} partition {record.partition} offset {record.offset}"
        if self.policy == "fail":
            raise BadRecordError(
                f"bad record in pipeline {self.pipeline!r} epoch {self.epoch_id} at {where}: {reason}"
            )
        log.warning(
            "dead-lettering bad record pipeline=%s epoch_id=%d topic=%s partition=%d offset=%d: %s",
            self.pipeline,
            self.epoch_id,
            record.topic,
            record.partition,
            record.offset,
            reason,
        )
        self.count += 1
        self.pending.append(
            DeadLetter(
                pipeline=self.pipeline,
                topic=record.topic,
                partition=record.partition,
                offset=record.offset,
                epoch_id=self.epoch_id,
                error=reason,
                key=record.key,
                value=record.value,
                headers=list(record.headers),
                error_class=error_class,
                timestamp=record.timestamp_ms,
                schema_id=schema_id,
            )
        )
        self.pending_bytes += record.size_bytes
        if len(self.pending) >= self.flush_every or (
            self.flush_bytes is not None and self.pending_bytes >= self.flush_bytes
        ):
            self.flush()

    def flush(self) -> None:
        """Write buffered dead letters to the sink (idempotent upsert)."""
        if self.pending:
            self.sink(self.pending)
            self.pending = []
            self.pending_bytes = 0


class LedgerDeadLetterSink:
    """Writes dead letters to ``eo.dead_letters`` through one ledger connection (opened on
    first use) that can do nothing else: a ``PostgresDeadLetters`` (``DeadLetterRecords``,
    ``ledger/model/ledger_roles.py``), never the whole ``Ledger``.

    Executors never migrate the schema (the driver's ledger access already did).
    """

    def __init__(self, ledger_dsn: str) -> None:
        self._dsn = ledger_dsn
        self._store: PostgresDeadLetters | None = None

    def __call__(self, rows: list[DeadLetter]) -> None:
        """Store ``rows`` (an idempotent upsert); raises ``LedgerUnavailable`` when the
        ledger cannot be reached."""
        if self._store is None:
            from airflow_provider_eo.ledger.store.postgres_ledger import PostgresDeadLetters

            self._store = PostgresDeadLetters.connect(self._dsn)
        self._store.record_dead_letters(rows)

    def close(self) -> None:
        """Close the ledger connection if one was opened."""
        if self._store is not None:
            self._store.close()
            self._store = None
