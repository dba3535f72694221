"""Spark Structured Streaming as the freshness benchmark's peer: a resident query with a
processing-time trigger writing a topic's records to HBase, until told to stop.

``spark-submit --jars <spark-kafka jars> benchmarks/streaming_peer_app.py --bootstrap HOST:PORT
--topic T --partitions N --hbase-host H --hbase-port P --table TABLE --checkpoint DIR
--stop-file PATH [--trigger-s 1]``

``spark.readStream.format("kafka")`` from offset 0 of every partition, ``foreachBatch``
writing each micro-batch's partitions with the ``spark_native`` peers' writer
(:func:`benchmarks.spark_native_app.partition_writer`: the provider's mapper, happybase
``Table.batch`` puts), ``trigger(processingTime=...)``, checkpoint in ``--checkpoint``. Each
micro-batch's end offsets are in ``offsets/<id>`` of the checkpoint and its completion is
``commits/<id>``'s write (:mod:`benchmarks.freshness_checkpoint` reads them). It stops when
``--stop-file`` exists and prints ``EO-PEER {"kind": "peer", "peer": "processing_time",
"records"}`` (rows written, counted by the writers).
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Sequence
from pathlib import Path

from benchmarks.spark_native_app import COLUMNS, MARKER, kafka_reader, partition_writer

PEER = "processing_time"


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The command line (module docstring); ``ends`` set to zeros: the reader starts at 0."""
    parser = argparse.ArgumentParser(prog="streaming_peer_app", description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--partitions", type=int, required=True)
    parser.add_argument("--hbase-host", required=True)
    parser.add_argument("--hbase-port", type=int, required=True)
    parser.add_argument("--table", required=True)
    parser.add_argument("--batch-size", type=int, default=1000)
    parser.add_argument("--checkpoint", type=Path, required=True)
    parser.add_argument("--stop-file", type=Path, required=True)
    parser.add_argument("--trigger-s", type=float, default=1.0)
    args = parser.parse_args(argv)
    args.ends = [0] * args.partitions
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Run the query until the stop file appears; prints its line."""
    from pyspark.sql import SparkSession

    args = parse_args(argv)
    spark = SparkSession.builder.appName("eo-bench-structured-streaming").getOrCreate()
    try:
        written = spark.sparkContext.accumulator(0)
        write = partition_writer(args.hbase_host, args.hbase_port, args.table, args.batch_size, written)
        query = (
            kafka_reader(spark.readStream, args)
            .load()
            .select(*COLUMNS)
            .writeStream.foreachBatch(lambda frame, _batch_id: frame.foreachPartition(write))
            .option("checkpointLocation", str(args.checkpoint))
            .trigger(processingTime=f"{args.trigger_s} seconds")
            .start()
        )
        while not args.stop_file.exists():
            if query.awaitTermination(0.5):  # ended on its own: a failure
                raise RuntimeError(f"query ended: {query.exception()}")
        query.stop()
        time.sleep(0.1)
        print(MARKER, json.dumps({"kind": "peer", "peer": PEER, "records": written.value}), flush=True)
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
