"""The Spark start-up levers of the spark-submits the suite runs itself (docs/performance.md).

The suite runs dozens of short spark-submits (a few records each), where starting the JVMs
and PySpark is most of the time. Through the write operator (Airflow runs, the operator
tests) they get the product's own start-up defaults
(``airflow_provider_eo/operators/driver_start.py``). The spark-submits a test starts itself
(the fault harness, tests/integration/spark_submit.py) get the same levers from
:func:`spark_conf` (on the command line: :func:`spark_conf_args`; in a pipeline: its
``spark.conf``):

* the driver JVM with C1 only and the serial collector (:data:`SPARK_DRIVER_JAVA_OPTIONS`);
* the session's class-data archive of the driver JVM (``-XX:SharedArchiveFile``), built once
  per test session in the background by :func:`start_driver_archive` and reused by every
  spark-submit after it. The fixtures that start a stack (``stack`` in tests/conftest.py,
  ``fault_stack``) start the build first, so it is built while the services start; otherwise
  (a reused stack) the first :func:`spark_conf` starts it and waits. A failed build only leaves
  it out (a JVM that cannot use an archive warns and starts normally); tests/conftest.py's
  ``pytest_sessionfinish`` removes it;
* the Python worker daemon importing the installed PySpark (:data:`SPARK_DAEMON_MODULE`);
* no Spark UI.

None of them changes what a job computes; only how fast its JVM and Python processes start.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

SPARK_SUBMIT = str(Path(sys.executable).parent / "spark-submit")
#: C1 only and the serial collector: a short-lived driver on few cores starts faster.
SPARK_DRIVER_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
#: Spark's Python worker daemon, importing the installed PySpark instead of Spark's zip.
SPARK_DAEMON_MODULE = "airflow_provider_eo.spark.pyspark_startup"
#: How long the first spark-submit waits for a build still running (then goes without).
ARCHIVE_BUILD_TIMEOUT_S = 180.0
ARCHIVE_APP = """
from pyspark import SparkConf, SparkContext
sc = SparkContext.getOrCreate(SparkConf().setAppName("eo-tests-cds").set("spark.ui.enabled", "false"))
assert sc.parallelize([1], 1).map(lambda x: x + 1).collect() == [2]
sc.stop()
"""


class DriverArchive:
    """One background build of the driver JVM's class-data archive in a temp dir of its own
    (one spark-submit of a trivial app with ``-XX:ArchiveClassesAtExit``, as docs/performance.md
    builds it)."""

    def __init__(self) -> None:
        self.directory = Path(tempfile.mkdtemp(prefix="eo-spark-archive-", dir="/tmp"))
        self.archive = self.directory / "spark-driver.jsa"
        app = self.directory / "archive_app.py"
        app.write_text(ARCHIVE_APP)
        java = f"{SPARK_DRIVER_JAVA_OPTIONS} -XX:ArchiveClassesAtExit={self.archive}"
        env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
        argv = [SPARK_SUBMIT, "--master", "local[2]", "--conf", f"spark.driver.extraJavaOptions={java}"]
        argv += ["--conf", f"spark.python.daemon.module={SPARK_DAEMON_MODULE}", str(app)]
        with (self.directory / "archive.log").open("wb") as log:
            self.proc = subprocess.Popen(
                argv,
                env=env,
                cwd=self.directory,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self._built: bool | None = None  # None: not waited for yet

    def path(self) -> Path | None:
        """The archive once its build succeeded (waits for a running build up to
        :data:`ARCHIVE_BUILD_TIMEOUT_S`, once); None if it failed or took longer."""
        if self._built is None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(ARCHIVE_BUILD_TIMEOUT_S)
            self._built = self.proc.returncode == 0 and self.archive.is_file()
        return self.archive if self._built and self.archive.is_file() else None

    def close(self) -> None:
        """Stop a build still running and remove the archive's directory."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        shutil.rmtree(self.directory, ignore_errors=True)


_LOCK = threading.Lock()
_SESSION: list[DriverArchive] = []  # the session's archive, once started


def start_driver_archive() -> None:
    """Start building the session's archive unless it is built or building; returns at once."""
    with _LOCK:
        if not _SESSION:
            _SESSION.append(DriverArchive())


def driver_archive() -> Path | None:
    """The session's archive, started now unless it was, once its build is done; None if the
    build failed."""
    with _LOCK:
        if not _SESSION:
            _SESSION.append(DriverArchive())
        return _SESSION[0].path()


def close_driver_archive() -> None:
    """Stop and remove the session's archive (at session end)."""
    with _LOCK:
        while _SESSION:
            _SESSION.pop().close()


def spark_conf() -> dict[str, str]:
    """Spark properties with the start-up levers (see the module doc): no UI, the driver JVM's
    options (with the session's archive once built), and the worker daemon."""
    java = SPARK_DRIVER_JAVA_OPTIONS
    archive = driver_archive()
    if archive is not None:
        java += f" -XX:SharedArchiveFile={archive}"
    return {
        "spark.ui.enabled": "false",
        "spark.driver.extraJavaOptions": java,
        "spark.python.daemon.module": SPARK_DAEMON_MODULE,
    }


def spark_conf_args() -> list[str]:
    """:func:`spark_conf` as spark-submit options (``--conf key=value`` ...)."""
    args: list[str] = []
    for key, value in spark_conf().items():
        args += ["--conf", f"{key}={value}"]
    return args
