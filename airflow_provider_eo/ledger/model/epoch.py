"""Value objects read from and written to the ledger."""

from __future__ import annotations

import base64
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from airflow_provider_eo.ledger.model.states import EpochKind, EpochState


@dataclass(frozen=True, order=True)
class PartitionRange:
    """Offsets ``[start, end)`` of one topic-partition (``start == end``: empty)."""

    topic: str
    partition: int
    start: int
    end: int

    @property
    def tp(self) -> tuple[str, int]:
        """The ``(topic, partition)`` pair."""
        return (self.topic, self.partition)

    @property
    def record_count(self) -> int:
        """Number of offsets in the range."""
        return self.end - self.start

    def to_summary(self) -> dict[str, Any]:
        """``{topic, partition, start, end, records}`` (``records``: :attr:`record_count`);
        the item of :meth:`Epoch.to_summary`'s ``ranges``."""
        return {
            "topic": self.topic,
            "partition": self.partition,
            "start": self.start,
            "end": self.end,
            "records": self.record_count,
        }


#: Ranges a log line names in full (:func:`ranges_text` with ``limit``); more are counted.
LOGGED_RANGES = 20


def ranges_text(ranges: Iterable[PartitionRange], limit: int | None = None) -> str:
    """Compact ``topic[p]=[start,end)`` list of ``ranges``, for log lines. With ``limit``,
    only the first ``limit`` are written, then ``,... and N more`` (N the rest's count)."""
    items = list(ranges)
    shown = items if limit is None else items[:limit]
    text = ",".join(f"{r.topic}[{r.partition}]=[{r.start},{r.end})" for r in shown)
    return text + _rest(len(items), len(shown))


def offsets_text(offsets: Mapping[tuple[str, int], int], limit: int | None = LOGGED_RANGES) -> str:
    """Compact ``topic[p]=offset`` list of ``offsets`` in partition order, for log lines and
    errors; beyond ``limit`` entries (``None``: no limit), ``,... and N more``."""
    items = sorted(offsets.items())
    shown = items if limit is None else items[:limit]
    return ",".join(f"{t}[{p}]={o}" for (t, p), o in shown) + _rest(len(items), len(shown))


def _rest(total: int, shown: int) -> str:
    return f",... and {total - shown} more" if shown < total else ""


@dataclass(frozen=True)
class Epoch:
    """One epoch with its ranges (ordered by topic, partition)."""

    epoch_id: int
    pipeline: str
    kind: EpochKind
    state: EpochState
    fencing_token: str
    dag_id: str
    run_id: str
    created_at: datetime
    written_at: datetime | None = None
    committed_at: datetime | None = None
    aborted_at: datetime | None = None
    metrics: dict[str, Any] | None = None
    error: str | None = None
    ranges: tuple[PartitionRange, ...] = field(default_factory=tuple)
    #: The digest of the mapping the epoch was reserved with (config/spec_digest.py); None
    #: for epochs reserved before the ledger recorded it.
    spec_digest: str | None = None

    @property
    def record_count(self) -> int:
        """Offsets covered by all ranges."""
        return sum(r.record_count for r in self.ranges)

    @property
    def ranges_brief(self) -> str:
        """:func:`ranges_text` of the first :data:`LOGGED_RANGES` ranges, then their count (for
        log lines: an epoch of 10,000 partitions logs 20 of them)."""
        return ranges_text(self.ranges, LOGGED_RANGES)

    @property
    def metrics_brief(self) -> dict[str, Any]:
        """The vote's metrics for a log line: each list or mapping replaced by its length, the
        rest as voted (the per-partition list of a 4,000-partition epoch is about 400 KB);
        empty before the vote."""
        return {
            key: len(value) if isinstance(value, list | dict) else value
            for key, value in (self.metrics or {}).items()
        }

    @property
    def end_offsets(self) -> dict[tuple[str, int], int]:
        """Each range's end: what a commit publishes to the consumer group."""
        return {r.tp: r.end for r in self.ranges}

    def to_summary(self) -> dict[str, Any]:
        """The epoch's one JSON form, read by the CLI, the UI's API, XCom and Asset events.

        Returns a new dict with exactly these keys, in this order: ``epoch_id``,
        ``pipeline``, ``kind`` and ``state`` (enum values), ``dag_id``, ``run_id``,
        ``ranges`` (:meth:`PartitionRange.to_summary` each: ``{topic, partition, start,
        end, records}``), ``records_total`` (offsets covered by all ranges), ``metrics``
        (the write step's vote, None before it), ``error`` (None, or the abort reason or
        failure), and ``created_at``, ``written_at``, ``committed_at``, ``aborted_at``
        (``datetime.isoformat`` strings, None while not reached). Never the fencing token:
        a consumer that needs it (the reserve XCom) adds it to a copy, as others add their
        own fields (``{**epoch.to_summary(), "action": ...}``).
        """
        return {
            "epoch_id": self.epoch_id,
            "pipeline": self.pipeline,
            "kind": self.kind.value,
            "state": self.state.value,
            "dag_id": self.dag_id,
            "run_id": self.run_id,
            "ranges": [r.to_summary() for r in self.ranges],
            "records_total": self.record_count,
            "metrics": self.metrics,
            "error": self.error,
            "created_at": _iso(self.created_at),
            "written_at": _iso(self.written_at),
            "committed_at": _iso(self.committed_at),
            "aborted_at": _iso(self.aborted_at),
        }


def _iso(moment: datetime | None) -> str | None:
    return None if moment is None else moment.isoformat()


@dataclass(frozen=True)
class DeadLetter:
    """A record that could not be mapped, kept with its raw bytes.

    The ledger stores one row per (pipeline, topic, partition, offset); recording the
    same record again (a retried write, a replay) overwrites it, unless the row already
    belongs to a newer epoch (a zombie writer of an older epoch never wins).
    ``error_class`` is the class name of the exception that rejected the record,
    ``timestamp`` the record's Kafka timestamp (ms since the epoch) and ``schema_id`` the
    Schema Registry id its value (else its key) named, when it came in a registry format.
    """

    pipeline: str
    topic: str
    partition: int
    offset: int
    epoch_id: int | None
    error: str
    key: bytes | None = None
    value: bytes | None = None
    headers: list[tuple[str, bytes | None]] | None = None
    error_class: str | None = None
    timestamp: int | None = None
    schema_id: int | None = None

    def headers_json(self) -> list[list[str | None]] | None:
        """Headers as JSON (values base64-encoded)."""
        if self.headers is None:
            return None
        return [[name, None if raw is None else base64.b64encode(raw).decode()] for name, raw in self.headers]


@dataclass(frozen=True)
class SequencedDeadLetter:
    """A committed dead letter with its place in the pipeline's publish order
    (``publish_seq``: 0, 1, 2, ... per pipeline, assigned when its epoch committed)."""

    publish_seq: int
    letter: DeadLetter

    @property
    def size_bytes(self) -> int:
        """Raw key plus value length (what bounds a publication batch)."""
        return len(self.letter.key or b"") + len(self.letter.value or b"")


@dataclass(frozen=True)
class OutgoingRecord:
    """One record for a dead-letter topic: key, value and headers (header values bytes)."""

    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]]
