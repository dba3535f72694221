"""The ``spark_native`` peers: what a Spark user writes with Spark's own Kafka source.

``spark-submit --jars <spark-kafka jars> benchmarks/spark_native_app.py --bootstrap HOST:PORT
--topic T --ends E0,E1,... --hbase-host H --hbase-port P --checkpoint-root DIR
--peer batch=TABLE [--peer available_now=TABLE ...]``

Each ``--peer`` writes the topic's records ``[0, E_p)`` of every partition ``p`` into its
HBase table, with Spark's default settings:

* ``batch``: ``spark.read.format("kafka")`` with ``startingOffsets`` and ``endingOffsets``
  (one bounded range, like an epoch);
* ``available_now``: ``spark.readStream.format("kafka")`` from the same starting offsets,
  ``foreachBatch`` with ``Trigger.AvailableNow`` and a fresh checkpoint directory under
  ``--checkpoint-root`` (it reads up to the offsets that are the latest when it starts: the
  topic must hold exactly the records).

Both write every Spark partition (one per Kafka partition) from ``foreachPartition`` with
happybase ``Table.batch(batch_size)`` puts of the cells the provider's own mapper
(``airflow_provider_eo.spark.task.mapping.build_mapper`` with the default mapping) makes, so
the cells are the write step's; cell versions are HBase's clock (a user's plain puts), not
offsets. Prints one line per peer, ``EO-PEER {"kind": "peer", "peer", "table", "records",
"seconds"}`` (``records`` counted by the partitions' writers; ``available_now`` adds
``micro_batches``, those that read records), and at the end ``EO-PEER {"kind": "app",
"spark_s"}``: from before the SparkSession to after its stop.
"""

from __future__ import annotations

import argparse
import json
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

MARKER = "EO-PEER"
PEERS = ("batch", "available_now")
FAMILY = "d"


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The command line; ``--peer`` is ``KIND=TABLE`` with KIND one of :data:`PEERS`."""
    parser = argparse.ArgumentParser(prog="spark_native_app", description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--ends", required=True, help="end offset of each partition, comma-separated")
    parser.add_argument("--hbase-host", required=True)
    parser.add_argument("--hbase-port", type=int, required=True)
    parser.add_argument("--batch-size", type=int, default=1000)
    parser.add_argument("--checkpoint-root", type=Path, required=True)
    parser.add_argument("--peer", action="append", required=True, metavar="KIND=TABLE")
    args = parser.parse_args(argv)
    args.ends = [int(end) for end in args.ends.split(",")]
    args.peers = [tuple(p.split("=", 1)) for p in args.peer]
    for peer in args.peers:
        if len(peer) != 2 or peer[0] not in PEERS or not peer[1]:
            parser.error(f"--peer {'='.join(peer)!r}: expected KIND=TABLE, KIND one of {', '.join(PEERS)}")
    return args


def offsets_json(topic: str, offsets: Iterable[int]) -> str:
    """Spark's ``startingOffsets``/``endingOffsets`` JSON for every partition of ``topic``."""
    return json.dumps({topic: {str(p): offset for p, offset in enumerate(offsets)}})


def partition_writer(host: str, port: int, table: str, batch_size: int, written: Any) -> Callable[..., None]:
    """The ``foreachPartition`` function: map each row with the provider's mapper and put it
    with happybase ``Table.batch``; adds the rows written to the accumulator ``written``."""

    def write(rows: Iterable[Any]) -> None:
        import happybase

        from airflow_provider_eo.config.specs import MappingSpec
        from airflow_provider_eo.spark.records import KafkaRecord, RowDelete
        from airflow_provider_eo.spark.task.mapping import build_mapper

        mapper = build_mapper(MappingSpec(), FAMILY)
        connection = happybase.Connection(host, port)
        count = 0
        try:
            with connection.table(table).batch(batch_size=batch_size) as batch:
                for key, value, topic, partition, offset in rows:
                    record = KafkaRecord(
                        topic,
                        partition,
                        offset,
                        None if key is None else bytes(key),
                        None if value is None else bytes(value),
                    )
                    mutation = mapper.map(record)
                    if mutation is None:  # a change envelope's tombstone: nothing to write
                        pass
                    elif isinstance(mutation, RowDelete):
                        batch.delete(mutation.row, columns=list(mutation.families))
                    else:
                        batch.put(mutation.row, mutation.cells)
                    count += 1
        finally:
            connection.close()
        written.add(count)

    return write


def kafka_reader(reader: Any, args: argparse.Namespace) -> Any:
    """``reader`` (``spark.read`` or ``spark.readStream``) on the topic from offset 0."""
    return (
        reader.format("kafka")
        .option("kafka.bootstrap.servers", args.bootstrap)
        .option("subscribe", args.topic)
        .option("startingOffsets", offsets_json(args.topic, [0] * len(args.ends)))
    )


COLUMNS = ("key", "value", "topic", "partition", "offset")


def run_peer(spark: Any, args: argparse.Namespace, peer: str, table: str) -> dict[str, Any]:
    """Write the records with one peer; its line's fields."""
    written = spark.sparkContext.accumulator(0)
    write = partition_writer(args.hbase_host, args.hbase_port, table, args.batch_size, written)
    line: dict[str, Any] = {"kind": "peer", "peer": peer, "table": table}
    started = time.monotonic()
    if peer == "batch":
        frame = kafka_reader(spark.read, args).option("endingOffsets", offsets_json(args.topic, args.ends))
        frame.load().select(*COLUMNS).foreachPartition(write)
    else:
        checkpoint = args.checkpoint_root / f"{peer}-{uuid.uuid4().hex}"
        checkpoint.mkdir(parents=True)  # fresh: an existing one would resume from its offsets
        query = (
            kafka_reader(spark.readStream, args)
            .load()
            .select(*COLUMNS)
            .writeStream.foreachBatch(lambda frame, _batch_id: frame.foreachPartition(write))
            .option("checkpointLocation", str(checkpoint))
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination()
        line["micro_batches"] = sum(1 for progress in query.recentProgress if progress.numInputRows)
    line["seconds"] = time.monotonic() - started
    line["records"] = written.value
    return line


def main(argv: Sequence[str] | None = None) -> int:
    """Run every ``--peer`` in one SparkSession, in the order given; prints the lines."""
    from pyspark.sql import SparkSession

    args = parse_args(argv)
    started = time.monotonic()
    spark = SparkSession.builder.appName("eo-bench-spark-native").getOrCreate()
    try:
        for peer, table in args.peers:
            print(MARKER, json.dumps(run_peer(spark, args, peer, table)), flush=True)
    finally:
        spark.stop()
    print(MARKER, json.dumps({"kind": "app", "spark_s": time.monotonic() - started}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
