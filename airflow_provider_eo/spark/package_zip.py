"""Build the ``--py-files`` zip of this package for clusters without the wheel installed.

    python -m airflow_provider_eo.spark.package_zip OUT.zip

The zip holds ``airflow_provider_eo/`` (Python sources and package data such as the
ledger's SQL migrations), without caches. The package is only what users install: the local
stack, the demo and the fault suite's kill/hang handler live outside it (``devtools/``,
``tests/faults/``), so nothing is left to exclude. Third-party dependencies (confluent-kafka,
grpcio-tools, happybase, thriftpy2, psycopg2, PyYAML) have native parts and must be installed on the cluster
image; they are not zipped. Entries are sorted and time-stamped
1980-01-01, so the same sources give a byte-identical zip.
"""

from __future__ import annotations

import argparse
import zipfile
from collections.abc import Sequence
from pathlib import Path

import airflow_provider_eo

PACKAGE_DIR = Path(airflow_provider_eo.__file__).resolve().parent
INCLUDED_SUFFIXES = (".py", ".sql", ".json", ".yaml")
EXCLUDED_PARTS = ("__pycache__",)


def package_files(root: Path = PACKAGE_DIR) -> list[Path]:
    """Files of the package that go into the zip, sorted."""
    return sorted(
        path
        for path in root.rglob("*")
        if path.is_file()
        and path.suffix in INCLUDED_SUFFIXES
        and not any(part in EXCLUDED_PARTS for part in path.relative_to(root).parts)
    )


def build_zip(out: str | Path, root: Path = PACKAGE_DIR) -> Path:
    """Write the zip to ``out`` (parents created); returns its path."""
    target = Path(out)
    target.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(target, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for path in package_files(root):
            name = (Path(root.name) / path.relative_to(root)).as_posix()
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            archive.writestr(info, path.read_bytes())
    return target


def main(argv: Sequence[str] | None = None) -> int:
    """CLI: build the zip and print its path."""
    parser = argparse.ArgumentParser(prog="airflow_provider_eo.spark.package_zip", description=__doc__)
    parser.add_argument("out", help="path of the zip to write")
    args = parser.parse_args(argv)
    print(build_zip(args.out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
