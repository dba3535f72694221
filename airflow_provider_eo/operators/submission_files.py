"""The files one write submission ships, each temporary one removed when its block exits.

:func:`shipped_package` builds the ``--py-files`` zip of the package (a non-local master's
executors import the package from it); :func:`private_environment_file` holds the driver's
environment of a cluster-mode submission, secrets included, readable by this user only
(:mod:`airflow_provider_eo.spark.driver.driver_environment`). Both delete what they made
when the block exits, errors included. :func:`check_local_files` refuses a ``--py-files``
entry on this machine that does not exist, and :func:`refuse_unreadable_credentials` a
connection's credential file this machine must read, before anything is submitted.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlparse

from airflow_provider_eo.clients.connections import env_var_name
from airflow_provider_eo.errors import ConfigError
from airflow_provider_eo.spark.driver.credential_files import credential_files, unreadable_files
from airflow_provider_eo.spark.driver.driver_environment import DRIVER_ENV_FILE, environment_file_text
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
def private_environment_file(env: Mapping[str, str]) -> Iterator[str]:
    """Yield the path of ``eo-driver-env.json`` holding ``env``, in a fresh directory (mode
    0700) and created with mode 0600; both are removed when the block exits."""
    directory = tempfile.mkdtemp(prefix="eo-driver-env-")  # mkdtemp: mode 0700
    path = Path(directory) / DRIVER_ENV_FILE
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(environment_file_text(env))
        yield str(path)
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def local_paths(entries: Iterable[str]) -> list[str]:
    """The entries (comma lists allowed) that name a file on this machine: a plain path or a
    ``file:`` URI (``local:`` means on every node, other schemes a cluster filesystem)."""
    paths = []
    for entry in (e.strip() for item in entries for e in item.split(",")):
        if not entry:
            continue
        parsed = urlparse(entry)
        if parsed.scheme in ("", "file"):
            paths.append(parsed.path if parsed.scheme else entry)
    return paths


def check_local_files(pipeline: str, py_files: str | None, conf: Mapping[str, str]) -> None:
    """Raise :class:`ConfigError` naming the first ``--py-files`` entry on this machine (the
    operator's ``py_files``, then the pipeline's ``spark.submit.pyFiles``) that is not a file."""
    sources = [("py_files", py_files), ("spark.submit.pyFiles", conf.get("spark.submit.pyFiles"))]
    for setting, value in sources:
        for path in local_paths([value or ""]):
            if not Path(path).is_file():
                raise ConfigError(
                    f"pipeline {pipeline}: --py-files entry {path!r} (from {setting}) does not exist "
                    "on this machine; nothing was submitted"
                )


def refuse_unreadable_credentials(
    pipeline: str, env: Mapping[str, str], *, master: str, deploy_mode: str, ledger_conn_id: str
) -> None:
    """Raise :class:`ConfigError` naming each credential file (:mod:`.credential_files`) of the
    connections in ``env`` that this machine cannot read, before anything is submitted.

    A local master and cluster deploy mode need every file here (read in place by a local
    driver and its executors, or shipped from here); client deploy mode on a cluster master
    only the ledger's (the driver here opens the ledger; the executors read the others on
    their own nodes, at the same path).
    """
    files = credential_files(env)
    if deploy_mode != "cluster" and not master.startswith("local"):
        files = [file for file in files if file.env_var == env_var_name(ledger_conn_id)]
    problems = unreadable_files(files)
    if problems:
        raise ConfigError(f"pipeline {pipeline}: {'; '.join(problems)}; nothing was submitted")
