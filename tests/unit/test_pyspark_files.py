"""The installed pyspark files are pyspark's own (not pyspark-client's), checked against RECORD."""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path

from eo_devtools.pyspark_files import pyspark_file_mismatches


def test_every_installed_pyspark_file_is_the_pyspark_distributions_own() -> None:
    assert pyspark_file_mismatches() == []


def _record_line(root: Path, name: str) -> str:
    data = (root / name).read_bytes()
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def _install(root: Path, dist: str, files: dict[str, bytes]) -> None:
    """A distribution as pip leaves it: its files and a dist-info with METADATA and RECORD."""
    for name, data in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
    info = root / f"{dist.replace('-', '_')}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n")
    lines = [_record_line(root, name) for name in files] + [f"{info.name}/RECORD,,"]
    (info / "RECORD").write_text("\n".join(lines) + "\n")


def test_a_file_overwritten_by_another_distribution_is_named(tmp_path: Path) -> None:
    _install(tmp_path, "eo-fake-spark", {"eofake/a.py": b"A = 1\n", "eofake/b.py": b"B = 2\n"})
    _install(tmp_path / "client", "eo-fake-client", {"eofake/a.py": b"A = 0\n"})
    path = [str(tmp_path), str(tmp_path / "client")]
    assert pyspark_file_mismatches("eo-fake-spark", "eofake/", path) == []
    (tmp_path / "eofake/a.py").write_bytes(b"A = 0\n")  # the client's copy, same size
    (tmp_path / "eofake/b.py").unlink()
    assert pyspark_file_mismatches("eo-fake-spark", "eofake/", path) == [
        "eofake/a.py: content differs from eo-fake-spark 1.0's RECORD"
        " (also recorded by another distribution)",
        "eofake/b.py: missing (recorded by eo-fake-spark 1.0)",
    ]
