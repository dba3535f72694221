"""Run one operator step in its own process (so a fault point can SIGKILL it).

``python -m tests.faults.steps reserve|commit|recover|write --pipeline P --pipelines-file F
--run-id R [--dag-id D] [--epoch-id N]`` prints the operator's return value as JSON on
the last stdout line; a skip prints ``{"skipped": true}``. ``write`` is
``WriteEpochOperator`` (``--fencing-token``, ``--spark-conn-id``, and ``--spark-conf`` JSON
added to the pipeline's ``spark.conf`` for this submission only): the Airflow side of a
write, a process tree a test may SIGKILL (``tests/faults/yarn_writes.py``). The operators are called
through ``execute(context)`` with a stand-in ``ti`` (dag_id/run_id): a run unknown to
Airflow, so recovery treats its RESERVED epochs as not live.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections.abc import Sequence
from typing import Any

from airflow.sdk.exceptions import AirflowSkipException

from airflow_provider_eo.config import load_pipeline
from airflow_provider_eo.operators.commit import CommitEpochOperator
from airflow_provider_eo.operators.recover import RecoverEpochsOperator
from airflow_provider_eo.operators.reserve import ReserveEpochOperator
from airflow_provider_eo.operators.write import WriteEpochOperator
from tests.task_context import task_context


def write_operator(
    pipeline: str, pipelines_file: str, epoch_id: int | None, write: dict[str, Any]
) -> WriteEpochOperator:
    """The write step of ``epoch_id``; ``write``: ``fencing_token``, ``spark_conn_id`` and
    ``spark_conf`` (added to the pipeline's ``spark.conf``)."""
    spec = load_pipeline(pipeline, pipelines_file)
    spark = dataclasses.replace(spec.spark, conf={**spec.spark.conf, **write["spark_conf"]})
    return WriteEpochOperator(
        task_id="write",
        pipeline=pipeline,
        epoch_id=epoch_id,
        fencing_token=write["fencing_token"],
        spec=dataclasses.replace(spec, spark=spark),
        pipelines_file=pipelines_file,
        spark_conn_id=write["spark_conn_id"],
    )


def run_step(
    step: str,
    pipeline: str,
    pipelines_file: str,
    dag_id: str,
    run_id: str,
    epoch_id: int | None,
    write: dict[str, Any] | None = None,
    try_number: int = 1,
) -> Any:
    """Execute one step as try ``try_number``; returns its result (``{"skipped": True}`` for a skip)."""
    common: dict[str, Any] = {"pipeline": pipeline, "pipelines_file": pipelines_file}
    op: Any
    if step == "write":
        op = write_operator(pipeline, pipelines_file, epoch_id, write or {})
    elif step == "reserve":
        op = ReserveEpochOperator(task_id="reserve", **common)
    elif step == "commit":
        op = CommitEpochOperator(task_id="commit", epoch_id=str(epoch_id), **common)
    elif step == "recover":
        op = RecoverEpochsOperator(task_id="recover", kind="stream", **common)
    else:
        raise ValueError(f"unknown step {step!r}")
    context = task_context(run_id, dag_id)
    context["ti"].try_number = try_number
    try:
        return op.execute(context)
    except AirflowSkipException:
        return {"skipped": True}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.faults.steps")
    parser.add_argument("step", choices=["reserve", "commit", "recover", "write"])
    parser.add_argument("--pipeline", required=True)
    parser.add_argument("--pipelines-file", required=True)
    parser.add_argument("--dag-id", required=True)
    parser.add_argument("--run-id", required=True)
    parser.add_argument("--epoch-id", type=int, default=None)
    parser.add_argument("--fencing-token", default=None)
    parser.add_argument("--spark-conn-id", default="spark_default")
    parser.add_argument("--spark-conf", default="{}", help="JSON object added to the pipeline's spark.conf")
    parser.add_argument("--try-number", type=int, default=1)
    args = parser.parse_args(argv)
    write = {
        "fencing_token": args.fencing_token,
        "spark_conn_id": args.spark_conn_id,
        "spark_conf": json.loads(args.spark_conf),
    }
    result = run_step(
        args.step,
        args.pipeline,
        args.pipelines_file,
        args.dag_id,
        args.run_id,
        args.epoch_id,
        write,
        args.try_number,
    )
    print(json.dumps(result, default=str), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
