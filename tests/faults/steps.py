"""Run one operator step in its own process (so a fault point can SIGKILL it).

``python -m tests.faults.steps reserve|commit|recover --pipeline P --pipelines-file F
--run-id R [--dag-id D] [--epoch-id N]`` prints the operator's return value as JSON on
the last stdout line; a skip prints ``{"skipped": true}``. The operators are called
through ``execute(context)`` with a stand-in ``ti`` (dag_id/run_id): a run unknown to
Airflow, so recovery treats its RESERVED epochs as not live.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from airflow.sdk.exceptions import AirflowSkipException

from airflow_provider_eo.operators.commit import CommitEpochOperator
from airflow_provider_eo.operators.recover import RecoverEpochsOperator
from airflow_provider_eo.operators.reserve import ReserveEpochOperator
from tests.task_context import task_context


def run_step(
    step: str, pipeline: str, pipelines_file: str, dag_id: str, run_id: str, epoch_id: int | None
) -> Any:
    """Execute one step; returns its result (``{"skipped": True}`` for a skip)."""
    common: dict[str, Any] = {"pipeline": pipeline, "pipelines_file": pipelines_file}
    op: Any
    if step == "reserve":
        op = ReserveEpochOperator(task_id="reserve", **common)
    elif step == "commit":
        op = CommitEpochOperator(task_id="commit", epoch_id=str(epoch_id), **common)
    elif step == "recover":
        op = RecoverEpochsOperator(task_id="recover", kind="stream", **common)
    else:
        raise ValueError(f"unknown step {step!r}")
    try:
        return op.execute(task_context(run_id, dag_id))
    except AirflowSkipException:
        return {"skipped": True}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.faults.steps")
    parser.add_argument("step", choices=["reserve", "commit", "recover"])
    parser.add_argument("--pipeline", required=True)
    parser.add_argument("--pipelines-file", required=True)
    parser.add_argument("--dag-id", required=True)
    parser.add_argument("--run-id", required=True)
    parser.add_argument("--epoch-id", type=int, default=None)
    args = parser.parse_args(argv)
    result = run_step(args.step, args.pipeline, args.pipelines_file, args.dag_id, args.run_id, args.epoch_id)
    print(json.dumps(result, default=str), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
