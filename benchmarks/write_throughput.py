"""Write-step throughput: the Spark application vs a plain single-process loop (not a test).

Produces ``--records`` JSON records over ``--partitions`` partitions (batched and
lz4-compressed, as producers normally send), then measures on the same data and the
same batch size:

* ``spark``: one backfill epoch written by ``spark-submit .../spark/app.py`` (local
  mode by default); records/s from the vote's ``duration_s`` (tasks only) and from
  the spark-submit wall time (JVM start included);
* ``plain``: one Python process, confluent-kafka assign+consume -> json -> happybase
  ``Table.batch(batch_size)`` puts, partition after partition.

Uses the local stack in ``--state-dir`` (started, and stopped afterwards, if it is not
running). Prints one JSON object. Example::

    python benchmarks/write_throughput.py --records 1000000 --partitions 8 --batch-size 1000
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import happybase
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from airflow_provider_eo.ledger import Ledger, PartitionRange
from airflow_provider_eo.spark import app as app_module
from eo_devtools.stack.stack import LocalStack


def produce(bootstrap: str, topic: str, records: int, partitions: int) -> None:
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "linger.ms": 20,
            "compression.type": "lz4",
            "enable.idempotence": True,
        }
    )
    for i in range(records):
        value = json.dumps({"user": i, "n": i % 97, "s": f"value-{i % 1013}", "ok": i % 2 == 0})
        while True:
            try:
                producer.produce(topic, key=f"k{i % 200_000}", value=value, partition=i % partitions)
                break
            except BufferError:
                producer.poll(0.1)
        producer.poll(0)
    deadline = time.monotonic() + 900
    while producer.flush(10) and time.monotonic() < deadline:
        pass
    if len(producer):
        raise RuntimeError(f"produce: {len(producer)} records undelivered after 15 minutes")


def high_watermarks(bootstrap: str, topic: str, partitions: int) -> list[int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "eo-bench-probe"})
    try:
        return [
            consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1] for p in range(partitions)
        ]
    finally:
        consumer.close()


def run_spark(
    env: dict[str, str], ledger_dsn: str, topic: str, ends: list[int], table: str, args: argparse.Namespace
) -> dict[str, Any]:
    pipelines = Path(tempfile.mkdtemp(prefix="eo-bench-")) / "pipelines.yaml"
    pipelines.write_text(
        f"pipelines:\n  - {{name: bench, topics: [{topic}], hbase: {{table: {table}}}, "
        f"batch_size: {args.batch_size}, spark: {{split_size: {args.split_size}}}}}\n"
    )
    with Ledger(ledger_dsn) as ledger:
        ranges = [PartitionRange(topic, p, 0, end) for p, end in enumerate(ends)]
        epoch_id = ledger.reserve_backfill_epoch(
            "bench", ranges, dag_id="bench", run_id=uuid.uuid4().hex
        ).epoch_id
    spark_submit = str(Path(sys.executable).parent / "spark-submit")
    argv = [spark_submit, "--master", args.master, "--conf", "spark.ui.enabled=false", app_module.__file__,
            "--pipeline", "bench", "--epoch-id", str(epoch_id),
            "--pipelines-file", str(pipelines)]  # fmt: skip
    started = time.monotonic()
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    wall = time.monotonic() - started
    if done.returncode != 0:
        raise RuntimeError(f"spark-submit exited {done.returncode}:\n{(done.stdout + done.stderr)[-3000:]}")
    with Ledger(ledger_dsn) as ledger:
        metrics = ledger.get_epoch(epoch_id).metrics or {}
    return {"records": metrics["records"], "tasks_s": metrics["duration_s"], "wall_s": round(wall, 2),
            "records_per_s_tasks": round(metrics["records"] / metrics["duration_s"]),
            "records_per_s_wall": round(metrics["records"] / wall)}  # fmt: skip


def run_plain(stack: LocalStack, topic: str, ends: list[int], table: str, batch_size: int) -> dict[str, Any]:
    started = time.monotonic()
    connection = happybase.Connection(stack.hbase_host, stack.hbase_port)
    hbase_table = connection.table(table)
    group = f"eo-bench-{uuid.uuid4().hex}"
    consumer = Consumer(
        {"bootstrap.servers": stack.kafka_bootstrap, "group.id": group, "enable.auto.commit": False}
    )
    count = 0
    for partition, end in enumerate(ends):
        consumer.assign([TopicPartition(topic, partition, 0)])
        with hbase_table.batch(batch_size=batch_size) as batch:
            position = 0
            while position < end:
                messages: list[Any] = consumer.consume(batch_size, timeout=0) or [consumer.poll(5)]
                for msg in messages:
                    if msg is None:
                        continue
                    if msg.error() or msg.offset() >= end:
                        continue
                    fields = json.loads(msg.value())
                    batch.put(msg.key(), {f"d:{k}".encode(): v if isinstance(v, str) else json.dumps(v)
                                          for k, v in fields.items()})  # fmt: skip
                    position = msg.offset() + 1
                    count += 1
    consumer.close()
    connection.close()
    seconds = time.monotonic() - started
    return {"records": count, "wall_s": round(seconds, 2), "records_per_s": round(count / seconds)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--batch-size", type=int, default=1000)
    parser.add_argument("--split-size", type=int, default=125_000)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--state-dir", default=os.environ.get("EO_STACK_STATE_DIR", ".eo-state"))
    args = parser.parse_args()
    stack = LocalStack(args.state_dir)
    started_here = not stack.is_up()
    if started_here:
        stack.up()
    try:
        suffix = uuid.uuid4().hex[:8]
        topic, tables = (
            f"bench-{suffix}",
            {"spark": f"bench_spark_{suffix}", "plain": f"bench_plain_{suffix}"},
        )
        admin = AdminClient({"bootstrap.servers": stack.kafka_bootstrap})
        admin.create_topics([NewTopic(topic, args.partitions, 1)])[topic].result(30)
        connection = happybase.Connection(stack.hbase_host, stack.hbase_port)
        for table in tables.values():
            connection.create_table(table, {"d": {}})
        t0 = time.monotonic()
        produce(stack.kafka_bootstrap, topic, args.records, args.partitions)
        produce_s = time.monotonic() - t0
        ends = high_watermarks(stack.kafka_bootstrap, topic, args.partitions)
        if sum(ends) != args.records:
            raise RuntimeError(f"high watermarks {ends} do not add up to {args.records}")
        env = {**os.environ, **stack.conn_env(), "PYSPARK_PYTHON": sys.executable}
        env["PYSPARK_DRIVER_PYTHON"] = sys.executable
        spark = run_spark(env, stack.ledger_dsn, topic, ends, tables["spark"], args)
        plain = run_plain(stack, topic, ends, tables["plain"], args.batch_size)
        settings = {
            k: getattr(args, k) for k in ("records", "partitions", "batch_size", "split_size", "master")
        }
        print(
            json.dumps(
                {**settings, "produce_s": round(produce_s, 1), "spark": spark, "plain": plain}, indent=2
            )
        )
        for table in tables.values():
            connection.delete_table(table, disable=True)
        admin.delete_topics([topic])[topic].result(30)
    finally:
        if started_here:
            stack.down()
    return 0


if __name__ == "__main__":
    sys.exit(main())
