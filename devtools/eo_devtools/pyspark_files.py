"""The installed ``pyspark/`` files are ``pyspark``'s own: a check against its RECORD.

``apache-airflow-providers-apache-spark`` requires ``pyspark-client`` (4.2.0 here), which
owns many of the same files under ``pyspark/`` as ``pyspark`` (4.3.0), a hundred of them
different. Which copy is on disk depends on the install order; ``scripts/setup.sh``
reinstalls ``pyspark`` last (``--force-reinstall --no-deps``) and then runs this check.

Contract of :func:`pyspark_file_mismatches`: one line per file of the distribution under
its package directory that is missing or differs from the distribution's RECORD (size,
and sha256 for every Python source, every file of at most :data:`HASHED_BYTES` and every file
another installed distribution also records; larger files only this distribution owns, the
jars and zips, by size);
an empty list when every file is the distribution's own. Raises
``importlib.metadata.PackageNotFoundError`` when the distribution is not installed.

``python -m eo_devtools.pyspark_files`` prints the mismatches and exits 1 when there is any.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import sys
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path

#: Files up to this size are always hashed, like every Python source; bigger ones when shared.
HASHED_BYTES = 1 << 18


def _distributions(search_path: list[str] | None) -> Iterable[metadata.Distribution]:
    return metadata.distributions() if search_path is None else metadata.distributions(path=search_path)


def shared_paths(dist_name: str, prefix: str, search_path: list[str] | None = None) -> set[str]:
    """Paths under ``prefix`` that another distribution installed on ``search_path`` (None:
    ``sys.path``) records too (read from the RECORD texts: building every distribution's file
    objects takes seconds)."""
    shared: set[str] = set()
    for other in _distributions(search_path):
        name = other.metadata["Name"]
        if name is None or _normal(name) == _normal(dist_name):
            continue
        record = other.read_text("RECORD") or ""
        shared.update(line.split(",", 1)[0] for line in record.splitlines() if line.startswith(prefix))
    return shared


def pyspark_file_mismatches(
    dist_name: str = "pyspark", prefix: str = "pyspark/", search_path: list[str] | None = None
) -> list[str]:
    """Files of ``dist_name`` under ``prefix`` not as its RECORD says (see the module contract);
    distributions are looked up on ``search_path`` (None: ``sys.path``)."""
    found = [
        d for d in _distributions(search_path) if _normal(d.metadata["Name"] or "") == _normal(dist_name)
    ]
    if not found:
        raise metadata.PackageNotFoundError(dist_name)
    dist = found[0]  # the first on the path: the one Python imports
    version = dist.version
    shared = shared_paths(dist_name, prefix, search_path)
    problems = []
    record = dist.read_text("RECORD") or ""  # not dist.files: it leaves out missing files
    for name, hashed, recorded_size in (row[:3] for row in csv.reader(record.splitlines()) if len(row) >= 3):
        if not name.startswith(prefix) or not hashed:
            continue
        mode, _, expected = hashed.partition("=")
        path = Path(str(dist.locate_file(name)))
        if not path.is_file():
            problems.append(f"{name}: missing (recorded by {dist_name} {version})")
            continue
        size = path.stat().st_size
        if recorded_size and size != int(recorded_size):
            problems.append(f"{name}: {size} bytes, {dist_name} {version} records {recorded_size}")
            continue
        if name.endswith(".py") or size <= HASHED_BYTES or name in shared:
            digest = hashlib.new(mode, path.read_bytes()).digest()
            if base64.urlsafe_b64encode(digest).rstrip(b"=").decode() != expected:
                owners = " (also recorded by another distribution)" if name in shared else ""
                problems.append(f"{name}: content differs from {dist_name} {version}'s RECORD{owners}")
    return problems


def _normal(name: str) -> str:
    return name.lower().replace("_", "-")


def main() -> int:
    """Print the mismatches of ``pyspark``; 1 when there is any."""
    problems = pyspark_file_mismatches()
    for line in problems:
        print(f"pyspark files: {line}", file=sys.stderr)
    if problems:
        print(
            f"pyspark files: {len(problems)} file(s) differ; reinstall it last: "
            "pip install --force-reinstall --no-deps pyspark==<the pin in constraints.txt>",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
