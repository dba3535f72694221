"""High watermarks and epoch ranges are exact record counts when producers batch and compress.

A normally configured producer (linger, lz4, idempotence) sends many records per batch;
the broker assigns one offset per record, so a partition holding n records has high
watermark n and the first epoch covers exactly ``[0, n)``. librdkafka's own statistics
prove the batches really held many records and were compressed.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import pytest

from airflow_provider_eo.hooks.kafka import EoKafkaHook
from airflow_provider_eo.ledger import Ledger
from tests.conftest import StackInfo
from tests.integration.ledger_support import make_spec, ranges_of, run_epoch
from tests.kafka_helpers import BATCHING_PRODUCER, RecordSender, consume_range

pytestmark = pytest.mark.integration

COUNTS = [1000, 700, 301]  # records per partition


def value(partition: int, i: int) -> str:
    return json.dumps({"partition": partition, "i": i, "payload": "abcdefgh" * 8})


def produce_with_stats(bootstrap: str, topic: str, timeout_s: float = 15) -> dict[str, int]:
    """Send ``COUNTS`` records, interleaving the partitions, and flush. Returns the producer's
    batch statistics for ``topic`` summed over every statistics window: ``batches``,
    ``records`` (in those batches), ``largest`` (records in the largest batch) and ``bytes``
    (batch bytes on the wire). Waits at most ``timeout_s`` for the windows that cover all
    records; AssertionError otherwise."""
    windows: list[dict[str, Any]] = []

    def on_stats(text: str) -> None:
        of_topic = json.loads(text).get("topics", {}).get(topic, {})
        if of_topic.get("batchcnt", {}).get("cnt"):
            windows.append({"count": of_topic["batchcnt"], "size": of_topic["batchsize"]})

    sender = RecordSender(bootstrap, **{"statistics.interval.ms": 100, "stats_cb": on_stats})
    for i in range(max(COUNTS)):
        for partition, n in enumerate(COUNTS):
            if i < n:
                sender.send(topic, f"k{partition}-{i}", value(partition, i), partition=partition)
    sender.flush()
    deadline = time.monotonic() + timeout_s
    while sum(w["count"]["sum"] for w in windows) < sum(COUNTS):
        if time.monotonic() > deadline:
            raise AssertionError(f"producer statistics for {topic} cover only: {windows}")
        sender.poll(0.1)
    return {
        "batches": sum(w["count"]["cnt"] for w in windows),
        "records": sum(w["count"]["sum"] for w in windows),
        "largest": max(w["count"]["max"] for w in windows),
        "bytes": sum(w["size"]["sum"] for w in windows),
    }


def test_batched_lz4_records_give_exact_watermarks_and_ranges(
    stack: StackInfo, ledger: Ledger, hook: EoKafkaHook, kafka_topic_factory: Callable[..., str]
) -> None:
    assert BATCHING_PRODUCER["compression.type"] == "lz4"
    topic = kafka_topic_factory(partitions=len(COUNTS), prefix="lz4")
    stats = produce_with_stats(stack.kafka_bootstrap, topic)
    raw_value_bytes = sum(len(value(p, i)) for p, n in enumerate(COUNTS) for i in range(n))
    assert stats["records"] == sum(COUNTS)
    assert stats["largest"] > 1 and stats["batches"] < stats["records"]  # many records per batch
    assert stats["bytes"] < raw_value_bytes // 2  # lz4 did compress them

    tps = [(topic, p) for p in range(len(COUNTS))]
    assert hook.watermarks(tps) == {(topic, p): (0, n) for p, n in enumerate(COUNTS)}
    spec = make_spec(topics=[topic])
    epoch = run_epoch(ledger, spec, hook, "r1")
    assert ranges_of(epoch) == [(topic, p, 0, n) for p, n in enumerate(COUNTS)]
    assert epoch is not None and epoch.record_count == sum(COUNTS)
    assert hook.committed_offsets(spec.group_id, tps) == {(topic, p): n for p, n in enumerate(COUNTS)}
    # every offset in [0, n) holds the next record sent to that partition, in order
    for partition, n in enumerate(COUNTS):
        read = consume_range(stack.kafka_bootstrap, topic, partition, 0, n)
        assert read == [(i, f"k{partition}-{i}".encode(), value(partition, i).encode()) for i in range(n)]
    assert run_epoch(ledger, spec, hook, "r2") is None
