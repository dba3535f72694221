"""What a Spark application needs to run in cluster mode on the local stack's YARN.

These are the cluster's settings, the ones a user puts in ``spark-defaults.conf`` or a
pipeline's ``spark.conf`` for *their* YARN; the provider knows none of them. Tests and the
demo build a pipeline's ``spark.conf`` from :func:`yarn_spark_conf` and run spark-submit
with :func:`yarn_submit_env` (``--master yarn --deploy-mode cluster``).

- ``spark.yarn.stagingDir``: a ``file://`` path (the cluster's filesystem is the local one).
- ``spark.yarn.jars=local:<pyspark>/jars/*``: containers use pyspark's jars where they are;
  without it every submit zips and copies 462 MB.
- ``spark.pyspark.python`` and the AM's and executors' ``PYSPARK_PYTHON``: the stack's
  executor Python (the venv's third-party packages, not this repository's editable installs,
  :func:`.spark_services.executor_python`), so the provider must arrive as ``--py-files``.
- 512 MB driver and executor, 256 MB overhead each, one executor of one core.
- ``SPARK_LOCAL_IP=127.0.0.1`` in the AM's and executors' environment: the driver and the
  executors listen on loopback, like every daemon of the stack.
- :data:`FAST_SETTINGS`: C1-only JVMs with the serial collector, shorter AM-RM heartbeats and
  client reports, no Spark UI.
"""

from __future__ import annotations

from pathlib import Path

from eo_devtools.stack.ports import LOOPBACK
from eo_devtools.stack.spark_services import executor_python, spark_home
from eo_devtools.stack.yarn_config import client_conf_dir, staging_dir
from eo_devtools.stack.yarn_services import java_home

JVM_START_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
"""C1 only and the serial collector: short-lived JVMs on 2 cores start and run a small job faster."""
FAST_SETTINGS: dict[str, str] = {
    # The driver (in cluster mode the AM's JVM) and the executors: no C2 or GC threads competing.
    "spark.driver.extraJavaOptions": JVM_START_OPTIONS,
    "spark.executor.extraJavaOptions": JVM_START_OPTIONS,
    # The AM asks the RM for containers every 3 s by default, every 200 ms while some are pending.
    "spark.yarn.scheduler.heartbeat.interval-ms": "500",
    "spark.yarn.scheduler.initial-allocation.interval": "100ms",
    # spark-submit polls the application's state every second by default.
    "spark.yarn.report.interval": "250ms",
    "spark.ui.enabled": "false",
}
"""Settings that only make an application's start and end quicker on this small cluster."""


def verified_spark_conf(state_dir: Path) -> dict[str, str]:
    """What pyspark needs to run in cluster mode on this YARN (docs/foundation.md, "YARN")."""
    python = str(executor_python(state_dir))
    return {
        "spark.yarn.stagingDir": staging_dir(state_dir).as_uri(),
        "spark.yarn.jars": f"local:{spark_home() / 'jars'}/*",
        "spark.pyspark.python": python,
        "spark.yarn.appMasterEnv.PYSPARK_PYTHON": python,
        "spark.executorEnv.PYSPARK_PYTHON": python,
        "spark.yarn.appMasterEnv.SPARK_LOCAL_IP": LOOPBACK,
        "spark.executorEnv.SPARK_LOCAL_IP": LOOPBACK,
        "spark.driver.memory": "512m",
        "spark.driver.memoryOverhead": "256m",
        "spark.executor.memory": "512m",
        "spark.executor.memoryOverhead": "256m",
        "spark.executor.instances": "1",
        "spark.executor.cores": "1",
    }


def yarn_spark_conf(state_dir: Path) -> dict[str, str]:
    """:func:`verified_spark_conf` plus :data:`FAST_SETTINGS`: a pipeline's ``spark.conf`` for
    the YARN of the stack in ``state_dir`` (``--master yarn --deploy-mode cluster``)."""
    return {**verified_spark_conf(state_dir), **FAST_SETTINGS}


def yarn_submit_env(state_dir: Path) -> dict[str, str]:
    """The variables spark-submit needs beside the usual environment: ``HADOOP_CONF_DIR`` and
    ``YARN_CONF_DIR`` (the stack's client conf dir), ``JAVA_HOME`` and ``SPARK_HOME`` (pyspark)."""
    conf = str(client_conf_dir(state_dir))
    return {
        "HADOOP_CONF_DIR": conf,
        "YARN_CONF_DIR": conf,
        "JAVA_HOME": str(java_home()),
        "SPARK_HOME": str(spark_home()),
    }


def conf_args(conf: dict[str, str]) -> list[str]:
    """``--conf key=value`` pairs for spark-submit, in ``conf``'s order."""
    args: list[str] = []
    for key, value in conf.items():
        args += ["--conf", f"{key}={value}"]
    return args
