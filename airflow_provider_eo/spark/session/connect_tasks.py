"""Running an epoch's write tasks as one job on a Spark Connect session.

The job is ``spark.range(n, numPartitions=n)`` (one row, so one Spark task, per pack of
:class:`~airflow_provider_eo.spark.records.TaskRange`, packed as in submit mode by
:func:`~airflow_provider_eo.spark.driver.task_packing.pack_tasks`) through ``mapInArrow``
running :func:`run_task_batches`: the same write-task code as submit mode
(:func:`~airflow_provider_eo.spark.task.task_pack.pack_partition_function`). The packs and
the :class:`TaskSettings` (with the connections' secrets) travel in the function's closure,
which Spark Connect sends with this job's plan only: nothing goes into the session's conf.
Each task first checks the executor's copy of the provider
(:func:`~.executor_package.check_executor_package`). Each range's metrics come back as one
JSON string; a failed task fails the job and :class:`SessionTasks` raises
:class:`~airflow_provider_eo.spark.driver.task_runner.TaskFailed` with the task's own error.
The job carries :attr:`SessionTasks.tag` (``spark.addTag``) while it runs, so another thread
can interrupt it (``interruptTag``).
"""

from __future__ import annotations

import array
import json
import time
from collections.abc import Iterator, Sequence
from functools import partial
from typing import Any

from airflow_provider_eo.errors import EoError
from airflow_provider_eo.spark.driver.task_packing import TaskPack, pack_tasks
from airflow_provider_eo.spark.driver.task_runner import SparkTasks, task_failure
from airflow_provider_eo.spark.records import TaskRange
from airflow_provider_eo.spark.session.executor_package import PackageIdentity, check_executor_package
from airflow_provider_eo.spark.task.task_errors import ExecutorTaskError, TaskErrorData
from airflow_provider_eo.spark.task.task_pack import pack_partition_function
from airflow_provider_eo.spark.task.write_task import TaskSettings

METRICS_SCHEMA = "metrics string"
DEFAULT_SLOTS = 8


def session_slots(session: Any) -> int:
    """How many tasks the session's cluster runs at once, for packing: its
    ``spark.default.parallelism``, else N of a ``local[N]`` master, else :data:`DEFAULT_SLOTS`
    (the server's executors are not visible to a Connect client)."""
    for key in ("spark.default.parallelism", "spark.master"):
        value = str(session.conf.get(key, "") or "")
        number = value[6:-1] if value.startswith("local[") else value
        if number.isdigit() and int(number) > 0:
            return int(number)
    return DEFAULT_SLOTS


def job_tag(pipeline: str, epoch_id: int, try_number: int | None) -> str:
    """``eo-<pipeline>-epoch-<id>-try-<n>``: the tag of one try's job (Spark tags take no
    commas; pipeline names have none)."""
    return f"eo-{pipeline}-epoch-{epoch_id}-try-{try_number if try_number is not None else 0}"


def run_task_batches(
    settings: TaskSettings, packs: Sequence[TaskPack], package: PackageIdentity, batches: Iterator[Any]
) -> Iterator[Any]:
    """The ``mapInArrow`` function (runs on an executor): each row's ``id`` is an index into
    ``packs``; yields one ``metrics`` JSON string per task range. Raises ``ExecutorTaskError``
    for an ``EoError`` (the executor's copy of the provider is not ``package`` among them)."""
    run = pack_partition_function(settings)
    where = f"pipeline={settings.pipeline} epoch_id={settings.epoch_id}"
    for batch in batches:
        chosen = [packs[index] for index in batch.column(0).to_pylist()]
        if not chosen:
            continue
        try:
            check_executor_package(package, where)
        except EoError as exc:
            data = TaskErrorData.of(exc, settings.pipeline, settings.epoch_id, chosen[0][0])
            raise ExecutorTaskError(data) from exc
        yield metrics_batch([json.dumps(result) for result in run(chosen)])


def metrics_batch(metrics: Sequence[str]) -> Any:
    """A ``metrics`` record batch (:data:`METRICS_SCHEMA`) of ``metrics``, built from its
    buffers: pyarrow's constructors from Python objects (``pa.array``,
    ``RecordBatch.from_pydict``) import pandas to ask whether the values are pandas objects,
    about 40 MB more in every Python worker, which needs nothing else of pandas."""
    import pyarrow as pa

    data = [text.encode("utf-8") for text in metrics]
    offsets = array.array("i", [0])
    for item in data:
        offsets.append(offsets[-1] + len(item))
    column = pa.StringArray.from_buffers(
        len(data), pa.py_buffer(offsets.tobytes()), pa.py_buffer(b"".join(data))
    )
    return pa.RecordBatch.from_arrays([column], names=["metrics"])


class SessionTasks:
    """The runner :func:`~airflow_provider_eo.spark.driver.write_epoch.write_epoch` takes, on
    ``session`` (a Spark Connect ``SparkSession``), tagging its job with ``tag``."""

    def __init__(self, session: Any, tag: str, package: PackageIdentity) -> None:
        self.session = session
        self.tag = tag
        self.package = package

    def __call__(self, settings: TaskSettings, tasks: Sequence[TaskRange]) -> SparkTasks:
        """Run the ranges packed into Spark tasks; one metrics dict per range, the job's times
        and its Spark task count. Raises ``TaskFailed``."""
        packs = pack_tasks(tasks, settings.split_size, session_slots(self.session))
        function = partial(run_task_batches, settings, packs, self.package)
        frame = self.session.range(0, len(packs), 1, len(packs)).mapInArrow(function, METRICS_SCHEMA)
        self.session.addTag(self.tag)
        try:
            started = time.monotonic()
            rows = frame.collect()
            metrics = [json.loads(row.metrics) for row in rows]
            return SparkTasks(metrics, started, time.monotonic(), len(packs))
        except Exception as exc:
            raise task_failure(exc) from exc
        finally:
            self.session.removeTag(self.tag)

    def interrupt(self) -> list[str]:
        """Interrupt the running job by its tag (from any thread); the operation ids interrupted."""
        return list(self.session.interruptTag(self.tag))
