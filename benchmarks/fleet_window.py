"""Pipelines running real epochs at once for a fixed time: the driver of the ``session_fleet``
section.

:func:`run_window` spawns ``workers`` task processes (fresh interpreters, as Airflow's task
processes are; each with its own ledger connection and the stack's ``AIRFLOW_CONN_*``).
Worker ``k`` drives the pipelines ``names[k::workers]`` in turn, one epoch at a time
(:func:`benchmarks.fleet_epoch.run_epoch`: reserve through ``EpochProtocol`` with the
operators' ``EoKafkaHook``, the write step, commit), so one pipeline never has two epochs
open (a DAG's ``max_active_runs=1``) and at most ``workers`` epochs run at once. The write step
is the write operator's, in the pipeline's ``spark.mode``: ``submit`` runs ``spark-submit`` of
the write application (the operator's start-up defaults, ``local[2]``); ``session`` runs
:class:`~airflow_provider_eo.operators.session_write.SessionWrite` on the stack's Connect
server. Both vote WRITTEN under the epoch's fencing token.

After the start barrier, ``warm_up_s`` of epochs are not counted (first JVMs, sessions and
Python workers), then the window of ``window_s``: an epoch counts when its commit returned
inside it. No epoch starts after the window; the ones running then finish (so the ledger and
the groups end settled) and do not count. :class:`~benchmarks.spark_memory.SparkMemoryMeter`
samples the Spark processes from the barrier to the last worker's end.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import subprocess
import tempfile
import time
import traceback
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from queue import Empty
from typing import Any

from airflow_provider_eo.config import PipelineSpec, load_pipelines
from airflow_provider_eo.ledger import Epoch, Ledger
from airflow_provider_eo.ledger.model.actors import Actor
from airflow_provider_eo.operators.write_submission import application_args
from benchmarks.fleet_epoch import CallTimedHook, EpochSample, EpochWrite, run_epoch
from benchmarks.spark_memory import SparkMemoryMeter
from benchmarks.spark_submit_run import TAIL_BYTES, spark_submit_path, submit_env
from benchmarks.write_step import submit_argv
from eo_devtools.stack.stack import LocalStack

MASTER = "local[2]"


@dataclass(frozen=True)
class WindowFleet:
    """What to run: the pipelines ``names`` of ``pipelines_file`` (each in its ``spark.mode``)
    on the stack in ``state_dir``, from ``workers`` task processes, for ``warm_up_s`` then
    ``window_s``."""

    state_dir: Path
    pipelines_file: Path
    names: Sequence[str]
    workers: int
    warm_up_s: float
    window_s: float


@dataclass
class WindowResult:
    """Every epoch's sample, the window's start and end (``time.monotonic()``), the whole
    run's wall time, the rolled-back transactions retried (by SQLSTATE), the peak summed
    RSS of the Spark processes and of the task processes, the Spark processes' peak PSS, and
    the peak RSS by kind of Spark process."""

    samples: list[EpochSample]
    window: tuple[float, float]
    wall_s: float
    peak_spark_rss_bytes: int
    peak_task_rss_bytes: int
    peak_spark_pss_bytes: int
    rollbacks: dict[str, int] = field(default_factory=dict)
    peak_spark_rss_by_kind: dict[str, int] = field(default_factory=dict)

    @property
    def counted(self) -> list[EpochSample]:
        """The epochs whose commit returned inside the window."""
        return in_window(self.samples, *self.window)


def in_window(samples: Sequence[EpochSample], start: float, end: float) -> list[EpochSample]:
    """The samples with ``start <= ended_at <= end``."""
    return [sample for sample in samples if start <= sample.ended_at <= end]


def run_window(fleet: WindowFleet, spark_roots: Sequence[int] = (), timeout_s: float = 1800) -> WindowResult:
    """Run ``fleet``; the memory meter follows the workers' trees and ``spark_roots`` (the
    Connect server). Raises RuntimeError with a worker's traceback if one failed or died."""
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(fleet.workers + 1, timeout=600)
    queue = context.Queue()
    workers = [
        context.Process(target=_worker, args=(fleet, index, barrier, queue), name=f"fleet-window-{index}")
        for index in range(fleet.workers)
    ]
    for process in workers:
        process.start()
    pids = [p.pid for p in workers if p.pid is not None]
    meter = SparkMemoryMeter(lambda: [*pids, *spark_roots])
    samples: list[EpochSample] = []
    rollbacks: Counter[str] = Counter()
    finished: set[int] = set()
    try:
        barrier.wait()  # every worker connected: start together
        started = time.monotonic()
        meter.start()
        window = (started + fleet.warm_up_s, started + fleet.warm_up_s + fleet.window_s)
        deadline = started + timeout_s
        while len(finished) < fleet.workers:
            try:
                kind, index, payload = queue.get(timeout=1)
            except Empty:
                dead = [i for i, p in enumerate(workers) if i not in finished and not p.is_alive()]
                if dead:
                    codes = [workers[i].exitcode for i in dead]
                    raise RuntimeError(f"fleet workers {dead} died (exit codes {codes})") from None
                if time.monotonic() > deadline:
                    raise TimeoutError(f"fleet window not done within {timeout_s:g} s") from None
                continue
            if kind == "sample":
                sample, rolled_back = payload
                samples.append(sample)
                rollbacks.update(rolled_back)
            elif kind == "done":
                finished.add(index)
            else:
                raise RuntimeError(f"fleet worker {index} failed:\n{payload}")
        wall_s = time.monotonic() - started
    finally:
        meter.stop()
        for process in workers:
            process.join(timeout=120)
            if process.is_alive():
                process.kill()
    return WindowResult(
        samples,
        window,
        wall_s,
        meter.peak_rss_bytes,
        meter.task_peak_rss_bytes,
        meter.peak_pss_bytes,
        dict(rollbacks),
        meter.peak_rss_by_kind,
    )


def submit_write(stack: LocalStack, pipelines_file: Path) -> Callable[[PipelineSpec, Epoch], None]:
    """The submit mode's write step: ``spark-submit`` of the write application for the epoch
    on ``local[2]`` with the operator's start-up defaults; raises RuntimeError with the
    output's tail when it exits non-zero."""

    def write(spec: PipelineSpec, epoch: Epoch) -> None:
        app_args = application_args(
            pipeline=spec.name,
            epoch_id=epoch.epoch_id,
            fencing_token=epoch.fencing_token,
            actor=Actor.process(),
            conn_id_args=[],
        )
        app_args += ["--pipelines-file", str(pipelines_file)]
        with submit_argv({}, MASTER, app_args) as argv, tempfile.TemporaryFile() as output:
            code = subprocess.call(
                [spark_submit_path(), *argv],
                env=submit_env(stack),
                stdout=output,
                stderr=subprocess.STDOUT,
            )
            if code != 0:
                output.seek(max(0, output.tell() - TAIL_BYTES))
                tail = output.read().decode("utf-8", "replace")
                raise RuntimeError(f"{spec.name} epoch {epoch.epoch_id}: spark-submit exited {code}:\n{tail}")

    return write


def session_write(stack: LocalStack) -> Callable[[PipelineSpec, Epoch], None]:
    """The session mode's write step: the write operator's
    :class:`~airflow_provider_eo.operators.session_write.SessionWrite` with this process's
    ``AIRFLOW_CONN_*`` (the stack's, ``spark_connect`` among them)."""
    from airflow_provider_eo.operators.session_write import SessionWrite
    from benchmarks.session_write_step import CONN_IDS

    def write(spec: PipelineSpec, epoch: Epoch) -> None:
        env = {name: value for name, value in os.environ.items() if name.startswith("AIRFLOW_CONN_")}
        SessionWrite(spec, epoch.epoch_id, epoch.fencing_token, dict(CONN_IDS)).run(None, env)

    return write


def _worker(fleet: WindowFleet, index: int, barrier: Any, queue: Any) -> None:
    """Worker ``index``: its pipelines' epochs in turn until the window ends, each reported."""
    try:
        stack = LocalStack(fleet.state_dir)
        os.environ.update(stack.conn_env())
        _ = CallTimedHook().settings  # configures Airflow's logging in this process: then quiet it
        for name in ("airflow_provider_eo", "airflow.task.hooks", "py4j", "pyspark"):
            logging.getLogger(name).setLevel(logging.WARNING)
        specs = load_pipelines(fleet.pipelines_file)
        mine = [specs[name] for name in fleet.names[index :: fleet.workers]]
        writers = {"submit": submit_write(stack, fleet.pipelines_file), "session": session_write(stack)}
        with Ledger(stack.ledger_dsn) as ledger:
            barrier.wait()
            end = time.monotonic() + fleet.warm_up_s + fleet.window_s
            round_no = 0
            while time.monotonic() < end:
                for spec in mine:
                    if time.monotonic() >= end:
                        break
                    write: EpochWrite = _bound(writers[spec.spark.mode], spec)
                    rolled_back: Counter[str] = Counter()
                    sample = run_epoch(ledger, spec, round_no, rolled_back, write=write)
                    queue.put(("sample", index, (sample, dict(rolled_back))))
                round_no += 1
        queue.put(("done", index, None))
    except BaseException:
        queue.put(("error", index, traceback.format_exc()))


def _bound(write: Callable[[PipelineSpec, Epoch], None], spec: PipelineSpec) -> EpochWrite:
    return lambda epoch: write(spec, epoch)
