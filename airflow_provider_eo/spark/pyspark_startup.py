"""Faster PySpark start-up in the write application's driver and Python workers.

Two costs every epoch paid, whatever its size (measured on an idle 2-core machine; two
to three times that under load):

* ``spark-submit`` puts ``$SPARK_HOME/python/lib/pyspark.zip`` and the py4j zip first on
  the ``PYTHONPATH`` of the driver and of every Python worker. Python caches no bytecode
  for modules imported from a zip, so each process compiles the PySpark modules it
  imports again: ``import pyspark.daemon, pyspark.worker`` takes 0.72 s from the zip,
  0.14 s from the installed package. :func:`prefer_installed_pyspark` drops those zips
  from ``sys.path`` when the same PySpark version is installed as a package (a pip
  install of ``pyspark`` ships both); otherwise it changes nothing.
* PySpark 4's py4j converter for numpy arrays imports ``pyspark.testing.utils`` on the
  driver's first JVM call only to read ``have_numpy``; that module imports pandas and
  pyarrow at import time (1.1 s). :func:`skip_pyspark_testing_import` gives it a module
  that answers ``have_numpy`` and loads the real one on any other attribute. The driver
  never passes numpy arrays to the JVM.

Run as a module it is Spark's Python worker daemon (``spark.python.daemon.module=
airflow_provider_eo.spark.pyspark_startup``): the path fix, the write task's modules imported
once (every worker the daemon forks then has them: a task's start no longer imports the Kafka,
HBase and ledger clients), then ``pyspark.daemon``'s manager.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import os
import sys
import types
import zipfile
from typing import Any

SPARK_ZIPS = ("pyspark.zip", "-src.zip")
"""Endings of the ``sys.path`` entries spark-submit adds (``pyspark.zip``, ``py4j-<v>-src.zip``)."""
TESTING_UTILS = "pyspark.testing.utils"


def _version(text: str) -> str | None:
    for line in text.splitlines():
        if line.startswith("__version__"):
            return line.split("=", 1)[1].strip().strip("'\"")
    return None


def _installed_version(origin: str) -> str | None:
    try:
        with open(os.path.join(os.path.dirname(origin), "version.py"), encoding="utf-8") as handle:
            return _version(handle.read())
    except OSError:
        return None


def _zip_version(path: str) -> str | None:
    try:
        with zipfile.ZipFile(path) as archive:
            return _version(archive.read("pyspark/version.py").decode("utf-8"))
    except (OSError, KeyError, zipfile.BadZipFile):
        return None


def prefer_installed_pyspark() -> bool:
    """Drop Spark's zips from ``sys.path`` when the installed PySpark is the zip's version
    (and py4j is installed too). Returns True when it changed ``sys.path``. Effective only
    before anything imports pyspark or py4j (afterwards it returns False, changing nothing)."""
    if "pyspark" in sys.modules or "py4j" in sys.modules:
        return False
    zips = [p for p in sys.path if p.endswith(SPARK_ZIPS)]
    pyspark_zip = next((p for p in zips if p.endswith("pyspark.zip")), None)
    if pyspark_zip is None:
        return False
    rest = [p for p in sys.path if p not in zips]
    installed = importlib.machinery.PathFinder.find_spec("pyspark", rest)
    if installed is None or installed.origin is None:
        return False
    if importlib.machinery.PathFinder.find_spec("py4j", rest) is None:
        return False
    if _installed_version(installed.origin) != _zip_version(pyspark_zip):
        return False
    sys.path[:] = rest
    return True


class _TestingUtilsUntilUsed(types.ModuleType):
    """Stands for ``pyspark.testing.utils`` until an attribute other than ``have_numpy`` is read."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):  # the import system probing (``__path__``): not a use
            raise AttributeError(name)
        del sys.modules[TESTING_UTILS]
        real = importlib.import_module(TESTING_UTILS)
        return getattr(real, name)


def skip_pyspark_testing_import() -> bool:
    """Answer PySpark's ``have_numpy`` check without importing pandas and pyarrow.

    Returns True when installed (not when ``pyspark.testing.utils`` is already imported).
    ``have_numpy`` is whether numpy is installed, as PySpark computes it; any other
    attribute imports the real module (once) and returns its value.
    """
    if TESTING_UTILS in sys.modules:
        return False
    stand_in = _TestingUtilsUntilUsed(TESTING_UTILS)
    stand_in.have_numpy = importlib.util.find_spec("numpy") is not None  # type: ignore[attr-defined]
    sys.modules[TESTING_UTILS] = stand_in
    return True


#: What every write task imports, loaded once by the daemon so that the workers it forks have it.
TASK_MODULE = "airflow_provider_eo.spark.task.write_task"


def preload_task_modules() -> bool:
    """Import :data:`TASK_MODULE` (and so the Kafka, HBase, ledger and format clients a write
    task uses) into this process; True when it could. A worker forked afterwards starts with
    them: unpickling its task then imports nothing. A failed import is left for the task to
    meet (and report) itself."""
    try:
        importlib.import_module(TASK_MODULE)
    except Exception:
        return False
    return True


def main() -> None:
    """Spark's Python worker daemon, with PySpark imported from the installed package and the
    write task's modules preloaded (:func:`preload_task_modules`)."""
    prefer_installed_pyspark()
    from pyspark import daemon

    preload_task_modules()
    daemon.manager()


if __name__ == "__main__":
    main()
