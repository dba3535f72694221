"""Throwaway topics of the fleet driver (:mod:`benchmarks.pipeline_fleet`): one topic of
``partitions`` partitions per pipeline, ``records`` records in each partition, and a
pipeline spec per topic that takes one record per partition per epoch. Deleted when the
``with`` block ends.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace

from confluent_kafka.admin import AdminClient, NewTopic

from airflow_provider_eo.config import CapsSpec, PipelineSpec, StartingSpec
from benchmarks.scratch_resources import _await_metadata, _produce, _wait_quietly

#: Partitions created per CreateTopics request (KRaft refuses > 10,000 records per request).
PARTITIONS_PER_REQUEST = 5000


@dataclass(frozen=True)
class FleetTopics:
    """The pipelines' specs (one topic each) and what making the topics cost."""

    specs: list[PipelineSpec]
    create_s: float
    produce_s: float


@contextmanager
def fleet_topics(
    bootstrap: str, pipelines: int, partitions: int, *, records: int, prefix: str = "eo-fleet"
) -> Iterator[FleetTopics]:
    """``pipelines`` topics of ``partitions`` partitions with ``records`` records in each
    partition, and a spec per topic (caps: one record per partition, the partition count
    per epoch, so each of ``records`` epochs has a non-empty range on every partition)."""
    run = uuid.uuid4().hex[:8]
    topics = [(f"{prefix}-{run}-{i:03d}", partitions) for i in range(pipelines)]
    per_request = max(1, PARTITIONS_PER_REQUEST // partitions)
    small_index = {"segment.index.bytes": "65536", "segment.bytes": str(16 * 1024 * 1024)}
    try:
        admin = AdminClient({"bootstrap.servers": bootstrap})
        started = time.perf_counter()
        for first in range(0, len(topics), per_request):
            batch = [
                NewTopic(name, count, 1, config=small_index)
                for name, count in topics[first : first + per_request]
            ]
            for future in admin.create_topics(batch, request_timeout=300).values():
                future.result(timeout=600)
        _await_metadata(admin, topics)
        create_s = time.perf_counter() - started
        started = time.perf_counter()
        _produce(bootstrap, topics, records)
        produce_s = time.perf_counter() - started
        del admin  # no live client while the fleet forks its workers (librdkafka is not fork-safe)
        specs = [_spec(f"{prefix}-{run}-{i:03d}", name, partitions) for i, (name, _) in enumerate(topics)]
        yield FleetTopics(specs, round(create_s, 1), round(produce_s, 1))
    finally:
        admin = AdminClient({"bootstrap.servers": bootstrap})
        names = [name for name, _ in topics]
        for first in range(0, len(names), per_request):
            for future in admin.delete_topics(
                names[first : first + per_request], request_timeout=300
            ).values():
                _wait_quietly(future.result)


def _spec(name: str, topic: str, partitions: int) -> PipelineSpec:
    spec = PipelineSpec(
        name=name,
        topics=(topic,),
        topic_pattern=None,
        group_id=f"{name}-group",
        hbase_table="fleet",
        column_family="d",
    )
    return replace(spec, starting=StartingSpec("earliest", None, "earliest"), caps=CapsSpec(1, partitions))
