"""One run of the write step as production runs it: ``spark-submit`` of the write application.

The submission carries the write operator's start-up defaults
(:func:`airflow_provider_eo.operators.driver_start.submission_conf`, with the driver class
archive) for every key ``conf`` does not set: the figures are what a pipeline that sets
nothing gets.

The epoch is a backfill epoch over the dataset's whole ranges, reserved in the stack's
ledger under a pipeline of its own that writes to a fresh HBase table. ``spark-submit``
is run and measured by :func:`benchmarks.spark_submit_run.measured_submit`.
"""

from __future__ import annotations

import tempfile
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import happybase
import yaml

from airflow_provider_eo.ledger import Ledger, PartitionRange
from airflow_provider_eo.operators.driver_start import submission_conf
from airflow_provider_eo.spark.driver import application as app_module
from benchmarks.dataset import Dataset
from benchmarks.spark_submit_run import measured_submit
from eo_devtools.ledger_direct import reserve_backfill_epoch
from eo_devtools.stack.stack import LocalStack


def fresh_table(stack: LocalStack, prefix: str) -> str:
    """Create an empty table with family ``d``; returns its name."""
    name = f"{prefix}_{uuid.uuid4().hex[:8]}"
    connection = happybase.Connection(stack.hbase_host, stack.hbase_port)
    try:
        connection.create_table(name, {"d": {}})
    finally:
        connection.close()
    return name


def drop_table(stack: LocalStack, name: str) -> None:
    """Disable and delete a benchmark table."""
    connection = happybase.Connection(stack.hbase_host, stack.hbase_port)
    try:
        connection.delete_table(name, disable=True)
    finally:
        connection.close()


def pipelines_yaml(
    pipeline: str,
    topic: str,
    table: str,
    *,
    batch_size: int,
    batch_bytes: int | None,
    split_size: int,
    mapping: Mapping[str, str] | None,
    mode: str = "submit",
) -> str:
    """The pipelines file of one benchmark pipeline (every other setting the default;
    ``spark.mode`` written only for ``session``)."""
    entry: dict[str, Any] = {
        "name": pipeline,
        "topics": [topic],
        "hbase": {"table": table},
        "batch_size": batch_size,
    }
    if batch_bytes is not None:
        entry["batch_bytes"] = batch_bytes
    if mapping:
        entry["mapping"] = dict(mapping)
    entry["spark"] = {"split_size": split_size}
    if mode != "submit":
        entry["spark"]["mode"] = mode
    return yaml.safe_dump({"pipelines": [entry]}, sort_keys=False)


@contextmanager
def submit_argv(conf: Mapping[str, str], master: str, app_args: Sequence[str]) -> Iterator[list[str]]:
    """spark-submit's arguments for the write application with ``app_args`` on ``master``
    (client deploy mode), ``conf`` with the write operator's start-up defaults
    (:func:`~airflow_provider_eo.operators.driver_start.submission_conf`, settled on exit)."""
    with submission_conf(conf, master=master, deploy_mode="client") as submitted:
        argv = ["--master", master]
        for key, value in submitted.items():
            argv += ["--conf", f"{key}={value}"]
        yield [*argv, str(app_module.__file__), *app_args]


def run_write_step(
    stack: LocalStack,
    dataset: Dataset,
    *,
    master: str = "local[2]",
    conf: dict[str, str] | None = None,
    label: str = "write_step",
    batch_size: int = 1000,
    batch_bytes: int | None = None,
    split_size: int = 125_000,
    keep_table: bool = False,
    mapping: Mapping[str, str] | None = None,
    mode: str = "submit",
) -> dict[str, Any]:
    """Write the dataset once with spark-submit (``mode="session"``: as one job on the stack's
    Spark Connect server, :func:`benchmarks.session_write_step.measured_session_write`, where
    ``master`` and ``conf`` do not apply: the server's are used); raises RuntimeError when the
    application fails.

    ``mapping``: the pipeline's ``mapping:`` settings (e.g. ``{"value_format": "avro"}``;
    default: the default JSON mapping). Returns
    :meth:`~benchmarks.spark_submit_run.SubmitRun.figures` (wall time from spark-submit's start
    to its exit; ``peak_rss_mb`` of the driver JVM + Python workers; CPU per record by
    component) plus ``tasks_records_per_s`` (the vote's ``duration_s``: the SparkContext and its
    tasks), ``table``, and the epoch's ``cells_written`` and ``bad_records`` (and
    ``schema_fetches`` when the epoch reports it), and the vote's ``spark_tasks_s``,
    ``spark_task_count`` and ``tasks`` (None when the epoch does not report it); with
    ``keep_table`` also ``pipeline``, ``epoch_id`` and ``pipelines_yaml`` (the epoch stays
    WRITTEN, its table kept).
    """
    table = fresh_table(stack, f"bench_{label}")
    pipeline = f"bench_{label}_{uuid.uuid4().hex[:6]}"
    workdir = tempfile.TemporaryDirectory(prefix="eo-bench-")  # the pipelines file, removed at the end
    pipelines = Path(workdir.name) / "pipelines.yaml"
    pipelines.write_text(
        pipelines_yaml(
            pipeline,
            dataset.topic,
            table,
            batch_size=batch_size,
            batch_bytes=batch_bytes,
            split_size=split_size,
            mapping=mapping,
            mode=mode,
        )
    )
    with Ledger(stack.ledger_dsn) as ledger:
        ranges = [PartitionRange(dataset.topic, p, 0, end) for p, end in enumerate(dataset.ends)]
        epoch_id = reserve_backfill_epoch(
            ledger, pipeline, ranges, dag_id="bench", run_id=uuid.uuid4().hex
        ).epoch_id
    if mode == "session":
        from benchmarks.session_write_step import measured_session_write

        run = measured_session_write(stack, pipelines, pipeline, epoch_id, label)
    else:
        app_args = ["--pipeline", pipeline, "--epoch-id", str(epoch_id), "--pipelines-file", str(pipelines)]
        with submit_argv(conf or {}, master, app_args) as argv:
            run = measured_submit(stack, argv, label)
    with Ledger(stack.ledger_dsn) as ledger:
        metrics = ledger.get_epoch(epoch_id).metrics or {}
    if metrics.get("records") != dataset.records:
        raise RuntimeError(
            f"{label}: epoch {epoch_id} voted {metrics.get('records')} records, expected {dataset.records}"
        )
    result = run.figures(dataset.records, dataset.megabytes)
    result["tasks_records_per_s"] = round(dataset.records / float(metrics["duration_s"]))
    result["table"] = table
    result["cells_written"] = metrics.get("cells_written")
    result["bad_records"] = metrics.get("bad_records")
    for key in ("spark_tasks_s", "spark_task_count", "tasks"):  # where the Spark job's time went
        result[key] = metrics.get(key)
    if "schema_fetches" in metrics:
        result["schema_fetches"] = metrics["schema_fetches"]
    if keep_table:  # what a later step over the same epoch needs (the audit section)
        result["pipeline"], result["epoch_id"] = pipeline, epoch_id
        result["pipelines_yaml"] = pipelines.read_text()
    else:
        drop_table(stack, table)
    workdir.cleanup()
    return result
