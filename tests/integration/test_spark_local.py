"""Spark in local mode through the printed ``spark_default`` connection and the venv's spark-submit."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from eo_devtools.stack.connections import spark_connection
from tests.spark_startup import spark_conf_args

pytestmark = pytest.mark.spark

JOB = """
from pyspark.sql import SparkSession
spark = SparkSession.builder.appName("eo-devstack-check").getOrCreate()
total = spark.sparkContext.parallelize(range(1, 101), 4).map(lambda x: x * x).sum()
print(f"EO-SPARK-RESULT sum_of_squares={total} master={spark.sparkContext.master}")
spark.stop()
"""


def test_spark_submit_on_path_is_the_venvs() -> None:
    assert shutil.which("spark-submit") == str(Path(sys.executable).parent / "spark-submit")


def test_spark_default_connection_runs_a_trivial_job(tmp_path: Path) -> None:
    master = json.loads(spark_connection())["host"]
    app = tmp_path / "job.py"
    app.write_text(JOB)
    spark_submit = Path(sys.executable).parent / "spark-submit"
    result = subprocess.run(
        [str(spark_submit), "--master", master, *spark_conf_args(), str(app)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    lines = [line for line in result.stdout.splitlines() if line.startswith("EO-SPARK-RESULT")]
    assert lines == ["EO-SPARK-RESULT sum_of_squares=338350 master=local[*]"]
