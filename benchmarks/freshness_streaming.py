"""The freshness benchmark's peer run: Spark Structured Streaming with a processing-time
trigger (:mod:`benchmarks.streaming_peer_app`) under the same load as the pipeline.

:func:`run` creates a fresh topic and table, starts the query with ``spark-submit``
(``local[2]``, the UI off, Spark's Kafka connector as ``--jars``, like the ``spark_native``
peers), waits for it to start (its checkpoint's ``metadata``), produces the warm-up (as the
pipeline's: until :data:`benchmarks.freshness.WARM_COMMITS` micro-batches have committed)
then the measured records, waits until the checkpoint's committed micro-batches hold every produced
offset, stops the query through its stop file, and reports as every freshness run does
(:func:`benchmarks.freshness_run.run_report`), the micro-batches from the checkpoint
(:mod:`benchmarks.freshness_checkpoint`).
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchmarks import streaming_peer_app
from benchmarks.dataset import delete_topic
from benchmarks.freshness_checkpoint import checkpoint_commits
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


def run(stack: LocalStack, load: Load, *, trigger_s: float = TRIGGER_S) -> dict[str, Any]:
    """The peer's run under ``load`` (module docstring); its report plus ``trigger_s``,
    ``master`` and ``records_written`` (the writers' count, which must be the records')."""
    from benchmarks.freshness import DRAIN_TIMEOUT_S, WARM_COMMITS, create_topic, holds_all, wait_for

    name = f"eo_bench_fresh_streaming_{uuid.uuid4().hex[:8]}"
    create_topic(stack, name, load.partitions)
    create_table(stack, name)
    try:
        with tempfile.TemporaryDirectory(prefix="eo-bench-streaming-") as scratch:
            checkpoint, stop = Path(scratch) / "checkpoint", Path(scratch) / "stop"
            argv = [
                spark_submit_path(), "--master", MASTER, "--conf", "spark.ui.enabled=false",
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
                        load.records_per_s,
                        load.warmup_s,
                        until=lambda: len(checkpoint_commits(checkpoint, name)) >= WARM_COMMITS,
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
    return {**report, "trigger_s": trigger_s, "master": MASTER, "records_written": line["records"]}
