"""The temporary files one write submission needs, each removed when its block exits.

:func:`shipped_package` builds the ``--py-files`` zip of the package (a non-local master's
executors import the package from it); :func:`private_properties_file` holds the
properties text of a cluster-mode submission, secrets included, readable by this user only.
Both delete what they made when the block exits, errors included.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from airflow_provider_eo.spark.package_zip import build_zip

PACKAGE_ZIP_NAME = "airflow_provider_eo.zip"


@contextmanager
def shipped_package() -> Iterator[str]:
    """Yield the path of a fresh zip of the package (``airflow_provider_eo.zip`` in a private
    temp dir, :func:`~airflow_provider_eo.spark.package_zip.build_zip`); the directory is
    removed when the block exits."""
    directory = tempfile.mkdtemp(prefix="eo-pyfiles-")
    try:
        yield str(build_zip(Path(directory) / PACKAGE_ZIP_NAME))
    finally:
        shutil.rmtree(directory, ignore_errors=True)


@contextmanager
def private_properties_file(text: str) -> Iterator[str]:
    """Yield the path of a temp file (mode 0600, created so) holding ``text``; the file is
    deleted when the block exits."""
    fd, path = tempfile.mkstemp(prefix="eo-spark-", suffix=".conf")
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        yield path
    finally:
        Path(path).unlink(missing_ok=True)
