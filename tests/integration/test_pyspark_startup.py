"""pyspark_startup on the installed PySpark and a real spark-submit: the driver and the workers
import the installed package, not Spark's zip, the driver's first JVM call imports no pandas,
and the workers start with the write task's modules the daemon preloaded."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyspark

INSTALLED = Path(pyspark.__file__).resolve().parent
LIB = INSTALLED / "python" / "lib"
SUBMIT = Path(sys.executable).with_name("spark-submit")

PROBE = """
import json, sys
from airflow_provider_eo.spark import pyspark_startup
changed = pyspark_startup.prefer_installed_pyspark()
skipped = pyspark_startup.skip_pyspark_testing_import()
import pyspark
from pyspark.testing.utils import have_numpy
before = "pandas" in sys.modules
from pyspark.testing.utils import assertDataFrameEqual
print(json.dumps({"changed": changed, "skipped": skipped, "file": pyspark.__file__, "have_numpy": have_numpy,
                  "pandas_before_use": before, "real_loaded": callable(assertDataFrameEqual),
                  "zips_left": [p for p in sys.path if p.endswith(("pyspark.zip", "-src.zip"))]}))
"""

APP = """
import json, sys
from airflow_provider_eo.spark import pyspark_startup
pyspark_startup.prefer_installed_pyspark()
pyspark_startup.skip_pyspark_testing_import()
from pyspark import SparkConf, SparkContext
sc = SparkContext.getOrCreate(SparkConf().set("spark.ui.enabled", "false"))
pandas_after_start = "pandas" in sys.modules
worker = sc.parallelize([0], 1).map(lambda _: __import__("pyspark").__file__).collect()
preloaded = sc.parallelize([0], 1).map(
    lambda _: "airflow_provider_eo.spark.task.write_task" in __import__("sys").modules
).collect()
sc.stop()
print("RESULT " + json.dumps({"driver": __import__("pyspark").__file__, "worker": worker,
                              "pandas_after_start": pandas_after_start, "preloaded": preloaded}))
"""


def spark_path() -> str:
    """PYTHONPATH as spark-submit builds it: Spark's zips first."""
    zips = [str(LIB / "pyspark.zip"), *(str(p) for p in LIB.glob("py4j-*-src.zip"))]
    return os.pathsep.join(zips)


def test_the_installed_package_replaces_sparks_zip_and_pandas_waits_for_a_real_use() -> None:
    env = {**os.environ, "PYTHONPATH": spark_path()}
    done = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result == {
        "changed": True,
        "skipped": True,
        "file": str(INSTALLED / "__init__.py"),
        "have_numpy": True,
        "pandas_before_use": False,
        "real_loaded": True,
        "zips_left": [],
    }


def test_without_sparks_zip_nothing_changes() -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert (result["changed"], result["file"], result["zips_left"]) == (
        False,
        str(INSTALLED / "__init__.py"),
        [],
    )


def test_spark_submit_driver_and_worker_daemon_import_the_installed_pyspark(tmp_path: Path) -> None:
    app = tmp_path / "probe_app.py"
    app.write_text(APP)
    done = subprocess.run(
        [
            str(SUBMIT),
            "--master",
            "local[1]",
            "--conf",
            "spark.python.daemon.module=airflow_provider_eo.spark.pyspark_startup",
            str(app),
        ],
        env={**os.environ, "PYSPARK_PYTHON": sys.executable},
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    (line,) = [x for x in (done.stdout + done.stderr).splitlines() if x.startswith("RESULT ")]
    installed = str(INSTALLED / "__init__.py")
    assert json.loads(line[len("RESULT ") :]) == {
        "driver": installed,
        "worker": [installed],
        "pandas_after_start": False,
        "preloaded": [True],  # the daemon imported the write task's modules before forking the worker
    }
