"""The provider's code on a Spark Connect session's executors, pinned to the client's copy.

The client ships :func:`session_package` (the deterministic zip of
:mod:`~airflow_provider_eo.spark.package_zip` plus ``package_identity.json``) with
``addArtifacts(..., pyfile=True)``; its name carries the version and the sources' digest, so
two copies never share a name. On the executor, :func:`check_executor_package` compares the
copy it imported with the identity the job carries and raises :class:`ExecutorPackageMismatch`
naming both when the version differs, or (when both know it) the sources' digest. An
installed copy on the executors (no ``package_identity.json``) is checked by version only.
"""

from __future__ import annotations

import hashlib
import json
import os
import pkgutil
import stat
import tempfile
import threading
import zipfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import airflow_provider_eo
from airflow_provider_eo.errors import EoError
from airflow_provider_eo.spark.package_zip import PACKAGE_DIR, build_zip, package_files

IDENTITY_FILE = "package_identity.json"
INSTALLED = "installed"
"""The digest of a copy installed on the executors (it has no :data:`IDENTITY_FILE`)."""


class ExecutorPackageMismatch(EoError):
    """The executor runs another copy of the provider than the Airflow task that sent the job."""


class PackageCacheUnsafe(EoError):
    """The directory the session's zip is cached in is not private to this user."""


@dataclass(frozen=True)
class PackageIdentity:
    """A copy of the provider: its ``__version__`` and the sha256 (hex) of its sources."""

    version: str
    digest: str

    def describe(self) -> str:
        return f"{self.version} (sources {self.digest[:12]})"


def sources_digest(root: Path = PACKAGE_DIR) -> str:
    """sha256 over every zipped file's relative path and bytes, in the zip's order."""
    digest = hashlib.sha256()
    for path in package_files(root):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(path.read_bytes())
    return digest.hexdigest()


@lru_cache(maxsize=1)
def client_identity() -> PackageIdentity:
    """This process's copy (computed once per process)."""
    return PackageIdentity(airflow_provider_eo.__version__, sources_digest())


def package_cache_dir() -> Path:
    """This user's directory of built zips under the system's temporary directory
    (``eo-session-package-<uid>``, mode 700), created when missing. Raises
    :class:`PackageCacheUnsafe` when it exists but another user owns it or others can write it
    (a zip planted there would run on the session's executors)."""
    uid = os.getuid()
    path = Path(tempfile.gettempdir()) / f"eo-session-package-{uid}"
    path.mkdir(mode=0o700, exist_ok=True)
    info = path.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != uid or info.st_mode & 0o077:
        raise PackageCacheUnsafe(
            f"{path}: the session package cache must be a directory owned by uid {uid} with mode 700 "
            f"(found uid {info.st_uid}, mode {stat.filemode(info.st_mode)}); remove it and run again"
        )
    return path


_BUILD_LOCK = threading.Lock()


def is_complete_package(path: Path, identity: PackageIdentity) -> bool:
    """Whether ``path`` is a readable zip holding exactly the package's files and the identity
    of ``identity`` (a file cut short, or written by a copy that differs, is not)."""
    try:
        with zipfile.ZipFile(path) as archive:
            names = archive.namelist()
            stored = json.loads(archive.read(f"airflow_provider_eo/{IDENTITY_FILE}"))
    except (OSError, KeyError, ValueError, zipfile.BadZipFile):
        return False
    expected = [f"{PACKAGE_DIR.name}/{p.relative_to(PACKAGE_DIR).as_posix()}" for p in package_files()]
    return names == [*expected, f"airflow_provider_eo/{IDENTITY_FILE}"] and stored == {
        "version": identity.version,
        "digest": identity.digest,
    }


@lru_cache(maxsize=1)
def session_package() -> Path:
    """The zip to ship: ``airflow_provider_eo-<version>-<digest12>.zip`` holding the package
    and its identity, in :func:`package_cache_dir`. Built once per provider copy, not per
    process: a later write reuses the file when :func:`is_complete_package` accepts it, and
    builds it again over one that is not. A build writes a private temporary file and renames
    it, so no reader, thread or process, ever sees a partial zip. One file per copy ever run
    stays, about 0.5 MB each."""
    identity = client_identity()
    target = package_cache_dir() / f"airflow_provider_eo-{identity.version}-{identity.digest[:12]}.zip"
    with _BUILD_LOCK:
        if target.exists() and is_complete_package(target, identity):
            return target
        handle, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".partial", dir=target.parent)
        os.close(handle)
        partial = Path(name)
        try:
            build_zip(partial)
            with zipfile.ZipFile(partial, "a", compression=zipfile.ZIP_DEFLATED) as archive:
                info = zipfile.ZipInfo(
                    f"airflow_provider_eo/{IDENTITY_FILE}", date_time=(1980, 1, 1, 0, 0, 0)
                )
                info.external_attr = 0o644 << 16
                archive.writestr(info, json.dumps({"version": identity.version, "digest": identity.digest}))
            os.replace(partial, target)
        finally:
            partial.unlink(missing_ok=True)
    return target


def executor_identity() -> PackageIdentity:
    """The copy this (executor) process imported: from its :data:`IDENTITY_FILE`, or
    ``__version__`` with digest :data:`INSTALLED` for an installed copy."""
    try:
        data = pkgutil.get_data("airflow_provider_eo", IDENTITY_FILE)
    except OSError:  # an installed copy (a directory without the file)
        data = None
    if data is None:
        return PackageIdentity(airflow_provider_eo.__version__, INSTALLED)
    loaded = json.loads(data)
    return PackageIdentity(str(loaded["version"]), str(loaded["digest"]))


def check_executor_package(expected: PackageIdentity, where: str) -> None:
    """Raise :class:`ExecutorPackageMismatch` naming both copies and ``where`` (pipeline and
    epoch) unless the executor's copy is ``expected``: same version, same digest when known."""
    found = executor_identity()
    same_sources = found.digest in (expected.digest, INSTALLED)
    if found.version != expected.version or not same_sources:
        raise ExecutorPackageMismatch(
            f"{where}: the executor runs airflow-provider-eo {found.describe()}, the Airflow task "
            f"sent {expected.describe()}; the session's executors must run the task's copy "
            "(docs/spark.md, 'Session mode')"
        )
