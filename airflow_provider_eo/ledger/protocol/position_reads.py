"""The reads behind the wait step's rule: a pipeline's cursors from the ledger, its listed
partitions and their watermarks from Kafka (:func:`read_positions`), and the rule
(``ledger/planning/new_records.py``) applied to them (``read_positions(...).pending()``).

Used by :class:`~airflow_provider_eo.operators.wait.WaitForRecordsOperator` and
:class:`~airflow_provider_eo.triggers.records_available.RecordsAvailableTrigger`. Read only:
nothing here writes (pins are the reservation transaction's).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from airflow_provider_eo.ledger.model.offsets import OffsetSource, TopicPartition
from airflow_provider_eo.ledger.planning.new_records import PipelinePositions


class CursorSource(Protocol):
    """What the rule reads from the ledger (:class:`~airflow_provider_eo.ledger.Ledger` is one)."""

    def cursors(self, pipeline: str) -> dict[TopicPartition, int]: ...


def read_positions(
    pipeline: str,
    topics: Sequence[str],
    topic_pattern: str | None,
    *,
    ledger: CursorSource,
    kafka: OffsetSource,
) -> PipelinePositions:
    """Read the ledger's cursors, then the listed partitions and their watermarks, now.

    Cursors are read before the watermarks: a commit landing between the two reads can
    only make the answer larger (an old cursor against new watermarks), never hide
    records. Blocking: the trigger calls it in a worker thread. Kafka errors propagate.
    """
    cursors = ledger.cursors(pipeline)
    listed = tuple(sorted(set(kafka.list_partitions(list(topics), topic_pattern))))
    watermarks = kafka.watermarks(listed) if listed else {}
    return PipelinePositions(pipeline, listed, cursors, watermarks)
