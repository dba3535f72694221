"""The freshness benchmark's peer run: Spark Structured Streaming with a processing-time
trigger (:mod:`benchmarks.streaming_peer_app`) under the same load as the pipeline.

:func:`run` creates a fresh topic and table, starts the query with ``spark-submit``
(``local[2]``, the UI off, Spark's Kafka connector as ``--jars``, like the ``spark_native``
peers; every micro-batch kept in the checkpoint: :data:`~benchmarks.freshness_checkpoint.KEEP_BATCHES`),
waits for it to start (its checkpoint's ``metadata``), then produces the warm-up at the load's
rate: at least ``warmup_s`` and until the query has caught up
(:func:`benchmarks.freshness_figures.caught_up`: each of its last :data:`CAUGHT_UP_BATCHES`
micro-batches read every record produced up to :data:`SLACK_S` before it was planned, so a
batch holds what one trigger brings, not a backlog of the query's start). Only then the
measured window: the records produced inside it are the figures. It waits until the
checkpoint's committed micro-batches hold every produced offset, stops the query through its
stop file, and reports as every freshness run does (:func:`benchmarks.freshness_run.run_report`),
the micro-batches from the checkpoint (:mod:`benchmarks.freshness_checkpoint`), plus how long
the warm-up took to catch up.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchmarks import streaming_peer_app
from benchmarks.dataset import delete_topic
from benchmarks.freshness_checkpoint import KEEP_BATCHES, checkpoint_commits
from benchmarks.freshness_figures import caught_up
from benchmarks.freshness_run import create_table, run_report
from benchmarks.spark_native_app import MARKER
from benchmarks.spark_submit_run import spark_submit_path, submit_env
from benchmarks.steady_producer import SteadyProducer
from benchmarks.write_step import drop_table
from eo_devtools.stack.jvm_artifacts import jar_list
from eo_devtools.stack.stack import LocalStack

if TYPE_CHECKING:
    from benchmarks.freshness import Load

MASTER = "local[2]"
TRIGGER_S = 1.0
START_TIMEOUT_S = 300.0
REPO = Path(__file__).resolve().parent.parent
CAUGHT_UP_BATCHES = 3
SLACK_S = 0.5
"""A record reaches the broker within milliseconds of its timestamp (``linger.ms`` 5) and Spark
reads the latest offsets just before it writes ``offsets/<id>``; half a second covers both."""


def caught_up_check(checkpoint: Path, topic: str, producer: SteadyProducer) -> Callable[[], bool]:
    """A check (asked about once a second while the warm-up runs) of whether the query on
    ``topic`` has caught up with ``producer``'s records (module docstring)."""
    produced_at: dict[tuple[int, int], float] = {}

    def check() -> bool:
        for record in producer.produced[len(produced_at) :]:  # (partition, offset) are unique
            produced_at[(record.partition, record.offset)] = record.produced_at
        return caught_up(checkpoint_commits(checkpoint, topic), produced_at, CAUGHT_UP_BATCHES, SLACK_S)

    return check


def run(stack: LocalStack, load: Load, *, trigger_s: float = TRIGGER_S) -> dict[str, Any]:
    """The peer's run under ``load`` (module docstring); its report plus ``trigger_s``,
    ``master``, ``records_written`` (the writers' count, which must be the records') and
    ``warmup_s`` (how long the warm-up produced: until the query had caught up)."""
    from benchmarks.freshness import DRAIN_TIMEOUT_S, create_topic, holds_all, wait_for

    name = f"eo_bench_fresh_streaming_{uuid.uuid4().hex[:8]}"
    create_topic(stack, name, load.partitions)
    create_table(stack, name)
    try:
        with tempfile.TemporaryDirectory(prefix="eo-bench-streaming-") as scratch:
            checkpoint, stop = Path(scratch) / "checkpoint", Path(scratch) / "stop"
            argv = [
                spark_submit_path(), "--master", MASTER, "--conf", "spark.ui.enabled=false",
                "--conf", f"spark.sql.streaming.minBatchesToRetain={KEEP_BATCHES}",
                "--jars", ",".join(str(jar) for jar in jar_list("spark-kafka")),
                str(streaming_peer_app.__file__),
                "--bootstrap", stack.kafka_bootstrap, "--topic", name,
                "--partitions", str(load.partitions),
                "--hbase-host", stack.hbase_host, "--hbase-port", str(stack.hbase_port),
                "--table", name, "--checkpoint", str(checkpoint), "--stop-file", str(stop),
                "--trigger-s", str(trigger_s),
            ]  # fmt: skip
            env = submit_env(stack)
            env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
            with (Path(scratch) / "output").open("w+b") as output:
                process = subprocess.Popen(argv, env=env, stdout=output, stderr=subprocess.STDOUT)
                try:
                    wait_for(
                        lambda: (checkpoint / "metadata").exists() or process.poll() is not None,
                        START_TIMEOUT_S,
                        "the streaming query's start",
                    )
                    producer = SteadyProducer(stack.kafka_bootstrap, name, load.partitions)
                    warmup = producer.run(
                        load.records_per_s, load.warmup_s, until=caught_up_check(checkpoint, name, producer)
                    )
                    measured = producer.run(load.records_per_s, load.seconds)
                    wait_for(
                        lambda: (
                            process.poll() is not None
                            or holds_all(checkpoint_commits(checkpoint, name), producer.produced)
                        ),
                        DRAIN_TIMEOUT_S,
                        f"{name}: micro-batches committing every produced record",
                    )
                    stop.touch()
                    code = process.wait(120)
                finally:
                    if process.poll() is None:
                        process.kill()
                output.seek(0)
                text = output.read().decode("utf-8", "replace")
            if code != 0:
                raise RuntimeError(f"streaming peer exited {code}:\n{text[-4000:]}")
            (line,) = [
                json.loads(raw.split(" ", 1)[1]) for raw in text.splitlines() if raw.startswith(MARKER)
            ]
            report = run_report(stack, name, warmup, measured, checkpoint_commits(checkpoint, name))
    finally:
        delete_topic(stack.kafka_bootstrap, name)
        drop_table(stack, name)
    produced = report["checked"]["records"]
    if line["records"] != produced:
        raise RuntimeError(f"streaming peer wrote {line['records']} rows for {produced} records")
    return {
        **report,
        "trigger_s": trigger_s,
        "master": MASTER,
        "records_written": line["records"],
        "warmup_s": round(len(warmup) / load.records_per_s, 1),
    }
