"""The write application's start-up settings: what a pipeline that sets nothing gets.

A small epoch spends most of its time starting two JVMs and PySpark (docs/performance.md,
"Fixed overhead of one epoch"). :func:`start_up_conf` is the Spark conf the write operator
adds for every key the pipeline's ``spark.conf`` does not set itself:

* ``spark.ui.enabled = false``: no web UI for a job that lives seconds;
* ``spark.driver.extraJavaOptions`` (client deploy mode only: the driver is this machine's
  ``spark-submit`` JVM) = :data:`DRIVER_JAVA_OPTIONS` (C1 only, the serial collector: no
  compiler or GC threads competing for a few cores while the driver only coordinates) and
  the driver's class-data archive (:mod:`.driver_class_archive`, made by the first run);
* ``spark.python.daemon.module`` = :data:`WORKER_DAEMON` (local masters only: the Python
  workers run on this machine, where the provider is installed): Spark's Python workers
  import the installed PySpark instead of compiling it again from Spark's zip.

None of them changes what the job computes. A pipeline opts out of one by setting its key
(``spark.driver.extraJavaOptions: ""`` runs the driver on the JVM's defaults,
``spark.python.daemon.module: pyspark.daemon`` on Spark's own daemon).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from airflow.sdk.configuration import conf

from airflow_provider_eo.operators.driver_class_archive import DriverClassArchive

DRIVER_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
WORKER_DAEMON = "airflow_provider_eo.spark.pyspark_startup"
UI_KEY = "spark.ui.enabled"
DRIVER_JAVA_KEY = "spark.driver.extraJavaOptions"
DAEMON_KEY = "spark.python.daemon.module"
#: ``[eo] spark_class_archive_dir``: where driver class archives are kept ("" = none are made).
ARCHIVE_DIR_OPTION = ("eo", "spark_class_archive_dir")


def class_archive() -> DriverClassArchive | None:
    """The driver class archive of this machine's JDK and Spark, in ``[eo]
    spark_class_archive_dir`` (unset: :func:`~.driver_class_archive.default_archive_dir`;
    set empty: None, no archive)."""
    configured = conf.get(*ARCHIVE_DIR_OPTION, fallback=None)
    if configured is not None and not configured.strip():
        return None
    return DriverClassArchive.for_installation(Path(configured) if configured else None)


def start_up_conf(
    pipeline_conf: Mapping[str, str],
    *,
    master: str,
    deploy_mode: str,
    archive: DriverClassArchive | None,
) -> dict[str, str]:
    """The start-up settings (see the module doc) for the keys ``pipeline_conf`` lacks, for a
    submission to ``master`` in ``deploy_mode``; ``archive`` (None: none) is the driver's
    class-data archive, asked for its JVM option only when the driver's options are added."""
    conf: dict[str, str] = {}
    if UI_KEY not in pipeline_conf:
        conf[UI_KEY] = "false"
    if DRIVER_JAVA_KEY not in pipeline_conf and deploy_mode == "client":
        archive_option = archive.java_options() if archive is not None else ""
        conf[DRIVER_JAVA_KEY] = f"{DRIVER_JAVA_OPTIONS} {archive_option}".strip()
    if DAEMON_KEY not in pipeline_conf and master.startswith("local"):
        conf[DAEMON_KEY] = WORKER_DAEMON
    return conf


@contextmanager
def submission_conf(
    pipeline_conf: Mapping[str, str], *, master: str, deploy_mode: str
) -> Iterator[dict[str, str]]:
    """``pipeline_conf`` with :func:`start_up_conf` added, for one submission of the write
    application; in client deploy mode the machine's :func:`class_archive` is settled when the
    block exits (a first recording kept only when the block exited without an exception)."""
    archive = class_archive() if deploy_mode == "client" else None
    defaults = start_up_conf(pipeline_conf, master=master, deploy_mode=deploy_mode, archive=archive)
    succeeded = False
    try:
        yield {**defaults, **pipeline_conf}
        succeeded = True
    finally:
        if archive is not None:
            archive.settle(succeeded=succeeded)
