"""The yardsticks the write step is measured against, each on the dataset's exact ranges.

* :func:`hand_loop`: what a user writes by hand in one process: confluent-kafka
  consumes every partition, ``json.loads``, happybase ``Table.batch`` puts (strings
  stored raw, other values as JSON, like the write step's default mapping);
* :func:`read_bound`: confluent-kafka consumes the ranges and does nothing else;
* :func:`write_bound`: Thrift ``mutateRowsTs`` of mutations built before the clock
  starts, batches of the same size and shape as the write step's segments. To keep
  memory small, ``distinct`` records are built and sent round-robin until the
  dataset's count is reached (rewriting a row costs HBase what a new one does).

Each returns :func:`benchmarks.spark_submit_run.figures` for its run.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import happybase
from confluent_kafka import Consumer, KafkaError, TopicPartition
from Hbase_thrift import BatchMutation, Mutation  # registered by happybase's thriftpy2 loader

from benchmarks.cpu_components import server_processes
from benchmarks.dataset import Dataset, event
from benchmarks.process_meter import cpu_seconds
from benchmarks.spark_submit_run import figures
from benchmarks.write_step import drop_table, fresh_table
from eo_devtools.stack.stack import LocalStack


def _consumer(stack: LocalStack, dataset: Dataset) -> Consumer:
    consumer = Consumer(
        {
            "bootstrap.servers": stack.kafka_bootstrap,
            "group.id": f"eo-bench-{uuid.uuid4().hex}",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
        }
    )
    consumer.assign([TopicPartition(dataset.topic, p, 0) for p in range(len(dataset.ends))])
    return consumer


def _messages(consumer: Consumer, dataset: Dataset, batch_size: int) -> Iterator[Any]:
    """Every record of the dataset's ranges (each partition up to its end), in batches."""
    remaining = {p for p, end in enumerate(dataset.ends) if end > 0}
    while remaining:
        for msg in consumer.consume(batch_size, timeout=1.0):
            err = msg.error()
            if err is not None:
                if err.code() != KafkaError._PARTITION_EOF:
                    raise RuntimeError(f"consume {dataset.topic}: {err}")
                continue
            partition, offset = int(msg.partition() or 0), int(msg.offset() or 0)
            if offset >= dataset.ends[partition]:
                continue
            if offset == dataset.ends[partition] - 1:
                remaining.discard(partition)
            yield msg


class _Run:
    """Wall clock, own CPU and the stack servers' CPU of one baseline run."""

    def __init__(self, stack: LocalStack) -> None:
        self.servers = list(server_processes(stack).values())
        self.server_before = cpu_seconds(self.servers)
        self.cpu_before = time.process_time()
        self.started = time.monotonic()

    def figures(self, dataset: Dataset, records: int) -> dict[str, Any]:
        wall = time.monotonic() - self.started
        client = time.process_time() - self.cpu_before
        server = cpu_seconds(self.servers) - self.server_before
        return figures(records, dataset.megabytes * records / dataset.records, wall, client, server)


def _cell(value: Any) -> bytes:
    return value.encode() if isinstance(value, str) else json.dumps(value, separators=(",", ":")).encode()


def hand_loop(stack: LocalStack, dataset: Dataset, batch_size: int = 1000) -> dict[str, Any]:
    """Consume -> json -> happybase batch puts into a fresh table; raises on a short read."""
    table_name = fresh_table(stack, "bench_loop")
    connection = happybase.Connection(stack.hbase_host, stack.hbase_port)
    consumer = _consumer(stack, dataset)
    run = _Run(stack)
    count = 0
    with connection.table(table_name).batch(batch_size=batch_size) as batch:
        for msg in _messages(consumer, dataset, batch_size):
            fields = json.loads(msg.value())
            batch.put(msg.key(), {b"d:" + name.encode(): _cell(value) for name, value in fields.items()})
            count += 1
    result = run.figures(dataset, count)
    consumer.close()
    connection.close()
    drop_table(stack, table_name)
    if count != dataset.records:
        raise RuntimeError(f"hand loop read {count} records, expected {dataset.records}")
    return result


def read_bound(stack: LocalStack, dataset: Dataset, batch_size: int = 1000) -> dict[str, Any]:
    """Consume the ranges, touching nothing but the messages' sizes."""
    consumer = _consumer(stack, dataset)
    run = _Run(stack)
    count = 0
    for _msg in _messages(consumer, dataset, batch_size):
        count += 1
    result = run.figures(dataset, count)
    consumer.close()
    if count != dataset.records:
        raise RuntimeError(f"read bound read {count} records, expected {dataset.records}")
    return result


def write_bound(
    stack: LocalStack,
    dataset: Dataset,
    batch_size: int = 1000,
    distinct: int = 200_000,
    make: Callable[[int], tuple[bytes, bytes]] = event,
) -> dict[str, Any]:
    """``mutateRowsTs`` of pre-built batches of ``batch_size`` records ``make(i)``; returns
    figures for ``dataset.records`` puts."""
    batches: list[list[Any]] = []
    for first in range(0, min(distinct, dataset.records), batch_size):
        batch = []
        for i in range(first, min(first + batch_size, distinct)):
            key, value = make(i)
            cells = json.loads(value)
            batch.append(
                BatchMutation(
                    key, [Mutation(column=b"d:" + k.encode(), value=_cell(v)) for k, v in cells.items()]
                )
            )
        batches.append(batch)
    table_name = fresh_table(stack, "bench_put")
    connection = happybase.Connection(stack.hbase_host, stack.hbase_port)
    name = connection.table(table_name).name
    run = _Run(stack)
    sent = 0
    version = 0
    while sent < dataset.records:
        batch = batches[version % len(batches)][: dataset.records - sent]
        version += 1
        connection.client.mutateRowsTs(name, batch, version, {})
        sent += len(batch)
    result = run.figures(dataset, sent)
    connection.close()
    drop_table(stack, table_name)
    return result
