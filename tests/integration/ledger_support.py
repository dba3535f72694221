"""Test support for the ledger: throwaway databases, pipeline specs, the real Kafka hook."""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import replace
from typing import Protocol

import pytest

from airflow_provider_eo.config import CapsSpec, PipelineSpec, StartingSpec
from airflow_provider_eo.hooks.kafka import EoKafkaHook
from airflow_provider_eo.ledger import Epoch, Ledger
from airflow_provider_eo.ledger.model.offsets import OffsetPublisher, OffsetSource
from eo_devtools.ledger_direct import reserve_stream_epoch
from eo_devtools.stack.scratch_database import scratch_database
from tests.conftest import StackInfo

TP = tuple[str, int]


def fresh_database(server_dsn: str) -> AbstractContextManager[str]:
    """``eo_test_<uuid>`` on the server of ``server_dsn``: its DSN, dropped afterwards."""
    return scratch_database(server_dsn, prefix="eo_test")


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


class OffsetBroker(OffsetSource, OffsetPublisher, Protocol):
    """What an epoch round trip needs from Kafka: offsets to reserve, a group to publish to."""


def stack_kafka_hook(stack: StackInfo) -> EoKafkaHook:
    """The real ``EoKafkaHook`` on the stack's ``AIRFLOW_CONN_EO_KAFKA`` connection.

    The connection is resolved here, while the stack's connection variables are set, so
    the hook works afterwards without them (module-scoped fixtures, forked workers).
    """
    with pytest.MonkeyPatch.context() as patch:
        for name, value in stack.conn_env.items():
            patch.setenv(name, value)
        hook = EoKafkaHook()
        assert hook.settings.config["bootstrap.servers"] == stack.kafka_bootstrap
    return hook


def run_epoch(
    ledger: Ledger, spec: PipelineSpec, kafka: OffsetBroker, run_id: str, dag_id: str = "d"
) -> Epoch | None:
    """Reserve, vote and commit one stream epoch, publishing its ends to the pipeline's
    consumer group before marking it COMMITTED; None (nothing opened) if there is no data."""
    epoch = reserve_stream_epoch(ledger, spec, kafka, dag_id=dag_id, run_id=run_id)
    if epoch is None:
        return None
    ledger.vote_written(epoch.epoch_id, epoch.fencing_token, {"records": epoch.record_count})
    kafka.commit_offsets(spec.group_id, epoch.end_offsets)
    return ledger.mark_committed(epoch.epoch_id)


def ranges_of(epoch: Epoch | None) -> list[tuple[str, int, int, int]]:
    """``[(topic, partition, start, end), ...]`` of an epoch (``[]`` for None)."""
    return [] if epoch is None else [(r.topic, r.partition, r.start, r.end) for r in epoch.ranges]


def assert_contiguous(
    epochs: Sequence[Epoch], cursors: Mapping[TP, int], first_start: int | Mapping[TP, int] = 0
) -> None:
    """Per partition, the non-empty committed ranges tile ``[first_start, cursor)`` exactly
    (``first_start`` per partition when a mapping)."""
    for tp, cursor in cursors.items():
        start = first_start if isinstance(first_start, int) else first_start[tp]
        spans = sorted((r.start, r.end) for e in epochs for r in e.ranges if r.tp == tp and r.end > r.start)
        assert spans[0][0] == start, tp
        assert all(a[1] == b[0] for a, b in itertools.pairwise(spans)), tp
        assert spans[-1][1] == cursor, tp
