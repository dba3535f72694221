"""The write application's driver JVM class-data archive, made and refreshed by the operator.

A driver JVM spends about a second loading and verifying Spark's classes from some 280 jars.
Java 17 can record the classes one run loaded into a dynamic archive
(``-XX:ArchiveClassesAtExit``) and map it on later starts (``-XX:SharedArchiveFile``).
:class:`DriverClassArchive` makes that automatic on the machine that runs ``spark-submit``
(the driver's machine in client deploy mode):

* the archive lives in a directory of its own (``[eo] spark_class_archive_dir``; default
  ``$XDG_CACHE_HOME/airflow-provider-eo/spark-class-archives``, ``~/.cache/...`` without it),
  named by a digest of the JDK (its ``release`` file) and of the Spark installation's jars
  (names, sizes, modification times): a new JDK or Spark gets a new archive, made by its
  first run; an archive no submission used for :data:`UNUSED_DAYS` days is removed then
  (each use touches its file);
* a submission finding no archive records one: :meth:`java_options` names a private partial
  file, the driver JVM writes it as it exits, and :meth:`settle` renames it into place once
  the submission succeeded (deletes it otherwise), so concurrent first runs never see a
  half-written archive;
* nothing here can fail a submission: a directory that cannot be made, read or written
  leaves the archive out (one warning), and a JVM that cannot use an archive (another JDK,
  a changed classpath) warns and starts without it.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import shutil
import time
import uuid
from pathlib import Path

log = logging.getLogger(__name__)

ARCHIVE_PREFIX = "spark-driver-"
ARCHIVE_SUFFIX = ".jsa"
PARTIAL_SUFFIX = ".partial"
#: An archive (or partial file) left unused this long is removed when another is made.
UNUSED_DAYS = 7


def default_archive_dir() -> Path:
    """``$XDG_CACHE_HOME/airflow-provider-eo/spark-class-archives`` (``~/.cache`` without it)."""
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "airflow-provider-eo" / "spark-class-archives"


def spark_home() -> Path | None:
    """The Spark installation ``spark-submit`` runs: ``$SPARK_HOME``, else the installed
    ``pyspark`` package (found without importing it); None when neither exists."""
    if os.environ.get("SPARK_HOME"):
        return Path(os.environ["SPARK_HOME"])
    import importlib.util

    spec = importlib.util.find_spec("pyspark")
    return Path(spec.origin).parent if spec is not None and spec.origin else None


def java_home() -> Path | None:
    """The JDK ``spark-submit`` starts: ``$JAVA_HOME``, else the one of ``java`` on the PATH."""
    if os.environ.get("JAVA_HOME"):
        return Path(os.environ["JAVA_HOME"])
    java = shutil.which("java")
    return Path(os.path.realpath(java)).parent.parent if java else None


def installation_digest(jdk: Path | None, spark: Path | None) -> str:
    """12 hex digits over the JDK's ``release`` file and the Spark jars' names, sizes and
    modification times (what an archive is valid for)."""
    digest = hashlib.sha256()
    for home in (jdk, spark):
        digest.update(str(home).encode())
    if jdk is not None and (jdk / "release").is_file():
        digest.update((jdk / "release").read_bytes())
    jars = spark / "jars" if spark is not None else None
    if jars is not None and jars.is_dir():
        for entry in sorted(os.scandir(jars), key=lambda e: e.name):
            stat = entry.stat()
            digest.update(f"{entry.name}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:12]


class DriverClassArchive:
    """The class-data archive of one JDK and Spark installation in ``directory`` (see the
    module doc). One instance serves one submission: :meth:`java_options`, then :meth:`settle`."""

    def __init__(self, directory: Path, digest: str) -> None:
        self.directory = directory
        self.path = directory / f"{ARCHIVE_PREFIX}{digest}{ARCHIVE_SUFFIX}"
        self._partial: Path | None = None

    @classmethod
    def for_installation(cls, directory: Path | None = None) -> DriverClassArchive:
        """The archive of the JDK and Spark that ``spark-submit`` will run (:func:`java_home`,
        :func:`spark_home`) in ``directory`` (default :func:`default_archive_dir`)."""
        return cls(directory or default_archive_dir(), installation_digest(java_home(), spark_home()))

    def java_options(self) -> str:
        """``-XX:SharedArchiveFile=<archive>`` when it exists; else ``-XX:ArchiveClassesAtExit``
        of a private partial file (the directory made first); "" when the directory is not usable."""
        if self.path.is_file():
            with contextlib.suppress(OSError):
                os.utime(self.path)  # in use: not pruned
            return f"-XX:SharedArchiveFile={self.path}"
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            if not os.access(self.directory, os.W_OK):
                raise PermissionError(f"{self.directory} is not writable")
        except OSError as exc:
            log.warning("no driver class archive (%s): the driver starts without one", exc)
            return ""
        self._partial = self.path.with_name(f"{self.path.name}.{uuid.uuid4().hex[:8]}{PARTIAL_SUFFIX}")
        log.info("recording the driver class archive %s in this run", self.path)
        return f"-XX:ArchiveClassesAtExit={self._partial}"

    def settle(self, *, succeeded: bool) -> None:
        """After the submission: a partial file the driver wrote becomes the archive when it
        ``succeeded`` (and files unused for :data:`UNUSED_DAYS` days are removed), else it is deleted."""
        partial, self._partial = self._partial, None
        if partial is None or not partial.is_file():
            return
        try:
            if not succeeded:
                partial.unlink()
                return
            os.replace(partial, self.path)
            self._prune_unused()
            log.info("driver class archive ready: %s", self.path)
        except OSError as exc:
            log.warning("driver class archive %s not kept: %s", self.path, exc)

    def _prune_unused(self) -> None:
        """Remove archives and partial files of this directory unused for :data:`UNUSED_DAYS` days."""
        cutoff = time.time() - UNUSED_DAYS * 86400
        for other in self.directory.glob(f"{ARCHIVE_PREFIX}*"):
            if other != self.path and other.stat().st_mtime < cutoff:
                other.unlink(missing_ok=True)
