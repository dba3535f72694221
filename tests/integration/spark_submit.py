"""``spark-submit`` of the package's write application, as the write operator runs it (local[2]),
with the suite's Spark start-up levers (tests/spark_startup.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import airflow_provider_eo.spark.driver.application as app_module
from tests.spark_startup import SPARK_SUBMIT, spark_conf_args


@dataclass(frozen=True)
class SubmitResult:
    """Exit code and the merged output (Spark merges the Python driver's stderr into stdout)."""

    returncode: int
    output: str


def spark_env(conn_env: Mapping[str, str]) -> dict[str, str]:
    """This process's environment plus ``conn_env`` (``AIRFLOW_CONN_*``), Spark's Python this one."""
    return {
        **os.environ,
        **conn_env,
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
    }


def submit_write(
    pipelines_file: Path, pipeline: str, epoch_id: int, env: Mapping[str, str], *extra: str
) -> SubmitResult:
    """Run the write application for ``epoch_id`` of ``pipeline``; ``extra`` are further app arguments."""
    argv = [
        SPARK_SUBMIT,
        "--master", "local[2]",
        *spark_conf_args(),
        app_module.__file__,
        "--pipeline", pipeline,
        "--epoch-id", str(epoch_id),
        "--pipelines-file", str(pipelines_file),
        *extra,
    ]  # fmt: skip
    done = subprocess.run(argv, env=dict(env), capture_output=True, text=True, timeout=900, check=False)
    return SubmitResult(done.returncode, done.stdout + done.stderr)


def submit_audit(
    pipelines_file: Path, pipeline: str, epoch_ids: str, run_key: str, env: Mapping[str, str]
) -> SubmitResult:
    """Run the audit application (``spark/driver/audit_application.py``) for ``epoch_ids``
    of ``pipeline``, storing its report under ``run_key``, as the audit DAG's task does."""
    import airflow_provider_eo.spark.driver.audit_application as audit_module

    argv = [
        SPARK_SUBMIT,
        "--master", "local[2]",
        *spark_conf_args(),
        audit_module.__file__,
        "--pipeline", pipeline,
        "--epoch-ids", epoch_ids,
        "--run-key", run_key,
        "--pipelines-file", str(pipelines_file),
    ]  # fmt: skip
    done = subprocess.run(argv, env=dict(env), capture_output=True, text=True, timeout=900, check=False)
    return SubmitResult(done.returncode, done.stdout + done.stderr)
