"""Test support for the ledger: throwaway databases, pipeline specs, a fake offset source."""

from __future__ import annotations

import itertools
import re
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

import psycopg2
from psycopg2 import sql
from psycopg2.extensions import make_dsn, parse_dsn

from airflow_provider_eo.config import CapsSpec, PipelineSpec, StartingSpec
from airflow_provider_eo.ledger import Epoch, Ledger

TP = tuple[str, int]


@contextmanager
def fresh_database(server_dsn: str) -> Iterator[str]:
    """Create ``eo_test_<uuid>`` on the server of ``server_dsn``; yield its DSN; drop it after."""
    name = f"eo_test_{uuid.uuid4().hex[:16]}"
    admin = psycopg2.connect(server_dsn)
    admin.autocommit = True
    try:
        with admin.cursor() as cur:
            cur.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        yield make_dsn(**{**parse_dsn(server_dsn), "dbname": name})
        with admin.cursor() as cur:
            cur.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))
    finally:
        admin.close()


def make_spec(
    name: str | None = None,
    *,
    topics: Sequence[str] = ("t",),
    pattern: str | None = None,
    policy: str = "earliest",
    timestamp_ms: int | None = None,
    new_partitions: str = "earliest",
    per_partition: int | None = None,
    total: int | None = None,
    on_data_loss: str = "fail",
    group_id: str | None = None,
) -> PipelineSpec:
    """A pipeline spec with a unique name unless ``name`` is given."""
    name = name or f"p-{uuid.uuid4().hex[:10]}"
    spec = PipelineSpec(
        name=name,
        topics=() if pattern else tuple(topics),
        topic_pattern=pattern,
        group_id=group_id or f"g-{name}",
        hbase_table="tbl",
        column_family="d",
    )
    return replace(
        spec,
        starting=StartingSpec(policy, timestamp_ms, new_partitions),  # type: ignore[arg-type]
        caps=CapsSpec(per_partition, total),
        on_data_loss=on_data_loss,  # type: ignore[arg-type]
    )


class FakeOffsetSource:
    """In-memory ``OffsetSource`` + ``OffsetPublisher``.

    A stand-in for what the local Tansu broker cannot do (a low watermark above zero
    after retention: no DeleteRecords; growth of one topic's partition count: no
    CreatePartitions) and for fast deterministic loops (200 epochs, races). The main
    reservation paths also run against the real broker in ``test_ledger_broker.py``.
    Each partition is ``[low, high)``; every record's timestamp is ``1000 * offset``.
    """

    def __init__(self, topics: Mapping[str, int] | None = None) -> None:
        self.partitions: dict[TP, list[int]] = {}
        self.groups: dict[str, dict[TP, int]] = {}
        for topic, count in (topics or {}).items():
            self.add_partitions(topic, count)

    def add_partitions(self, topic: str, count: int) -> None:
        """Grow ``topic`` to ``count`` partitions (creating it if needed)."""
        for partition in range(count):
            self.partitions.setdefault((topic, partition), [0, 0])

    def produce(self, topic: str, partition: int, n: int) -> None:
        self.partitions[(topic, partition)][1] += n

    def set_low(self, topic: str, partition: int, low: int) -> None:
        """Simulate retention deleting records below ``low``."""
        self.partitions[(topic, partition)][0] = low

    def list_partitions(self, topics: Sequence[str] | None, pattern: str | None) -> list[TP]:
        wanted = set(topics or ())
        regex = re.compile(pattern) if pattern else None
        return sorted(tp for tp in self.partitions if tp[0] in wanted or (regex and regex.fullmatch(tp[0])))

    def watermarks(self, tps: Iterable[TP]) -> dict[TP, tuple[int, int]]:
        return {tp: (self.partitions[tp][0], self.partitions[tp][1]) for tp in tps}

    def offsets_for_timestamp(self, tps: Iterable[TP], ts_ms: int) -> dict[TP, int]:
        result = {}
        for tp in tps:
            low, high = self.partitions[tp]
            result[tp] = min(max(low, -(-ts_ms // 1000)), high)
        return result

    def committed_offsets(self, group_id: str, tps: Iterable[TP]) -> dict[TP, int | None]:
        group = self.groups.get(group_id, {})
        return {tp: group.get(tp) for tp in tps}

    def commit_offsets(self, group_id: str, offsets: Mapping[TP, int]) -> None:
        self.groups.setdefault(group_id, {}).update(offsets)


def run_epoch(
    ledger: Ledger, spec: PipelineSpec, source: Any, run_id: str, dag_id: str = "d"
) -> Epoch | None:
    """Reserve, vote and commit one stream epoch (publishing its ends); None if no data."""
    epoch = ledger.reserve_stream_epoch(spec, source, dag_id=dag_id, run_id=run_id)
    if epoch is None:
        return None
    ledger.vote_written(epoch.epoch_id, epoch.fencing_token, {"records": epoch.record_count})
    if hasattr(source, "commit_offsets"):
        source.commit_offsets(spec.group_id, epoch.end_offsets)
    return ledger.mark_committed(epoch.epoch_id)


def ranges_of(epoch: Epoch | None) -> list[tuple[str, int, int, int]]:
    """``[(topic, partition, start, end), ...]`` of an epoch (``[]`` for None)."""
    return [] if epoch is None else [(r.topic, r.partition, r.start, r.end) for r in epoch.ranges]


def assert_contiguous(epochs: Sequence[Epoch], cursors: Mapping[TP, int], first_start: int = 0) -> None:
    """Per partition, the non-empty committed ranges tile ``[first_start, cursor)`` exactly."""
    for tp, cursor in cursors.items():
        spans = sorted((r.start, r.end) for e in epochs for r in e.ranges if r.tp == tp and r.end > r.start)
        assert spans[0][0] == first_start, tp
        assert all(a[1] == b[0] for a, b in itertools.pairwise(spans)), tp
        assert spans[-1][1] == cursor, tp
