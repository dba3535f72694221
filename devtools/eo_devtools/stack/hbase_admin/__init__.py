"""What HBase's Thrift1 API cannot do, for the demo and the tests: families with
``KEEP_DELETED_CELLS``, pre-split tables, flush + major compaction with a bounded wait, raw
scans (delete markers included), and the region layout: live region servers, a table's
regions, a split or a move that returns once the regions are open again. One copy: the demo
creates its tables through it, the tests assert with it.

:class:`HBaseTableTool` runs ``HBaseTableTool.java`` (HBase's own Java ``Admin`` API) with
the HBase client jars the local stack already resolved and the stack's ``hbase/conf`` dir
(``hbase-site.xml`` says where ZooKeeper is). The Java source is compiled once per version
of the source with the JDK's ``javac`` (the single-file source launcher is used when there
is no ``javac`` next to ``java``). Each call is one short JVM (about 2-4 s). The ``.java``
source and ``log4j.properties`` are package data of ``eo_devtools.stack.hbase_admin``
(``devtools/pyproject.toml``), found next to this module at run time.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from eo_devtools.stack.hbase_layout import JDK17_OPTIONS, hbase_home
from eo_devtools.stack.jvm_artifacts import classpath, java_binary

HERE = Path(__file__).resolve().parent
SOURCE = HERE / "HBaseTableTool.java"


@dataclass(frozen=True)
class Region:
    """One region of a table: encoded name, start and end key (``Bytes.toStringBinary``;
    empty at the table's ends), the server hosting it (``host,port,startcode``; ``-``: none)."""

    name: str
    start: str
    end: str
    server: str


@dataclass(frozen=True)
class RawCell:
    """One cell of a raw scan: a value or a delete marker (``kind`` e.g. ``Put``, ``DeleteFamily``)."""

    row: str
    column: str
    timestamp: int
    kind: str
    value: str


@functools.cache
def _compiled_classes() -> Path | None:
    """A directory holding the compiled tool, or None to run the source file directly.

    Compiled once per source version into ``<tmp>/eo-hbase-tool-<digest>`` (reused by later
    runs; a staging directory renamed into place, so concurrent runs never see half).
    """
    javac = Path(os.path.realpath(java_binary())).parent / "javac"
    if not javac.is_file():
        return None
    digest = hashlib.sha256(SOURCE.read_bytes()).hexdigest()[:16]
    target = Path(tempfile.gettempdir()) / f"eo-hbase-tool-{digest}"
    if (target / "HBaseTableTool.class").is_file():
        return target
    staging = Path(tempfile.mkdtemp(prefix=f"{target.name}-", dir=target.parent))
    done = subprocess.run(
        [str(javac), "-nowarn", "-cp", classpath("hbase"), "-d", str(staging), str(SOURCE)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if done.returncode != 0:
        shutil.rmtree(staging, ignore_errors=True)
        raise RuntimeError(f"javac {SOURCE.name} failed:\n{done.stdout}{done.stderr}")
    try:
        staging.rename(target)
    except OSError:  # another run put it there first
        shutil.rmtree(staging, ignore_errors=True)
    return target


def _families(lines: Sequence[str]) -> dict[str, dict[str, str]]:
    """The tool's ``family NAME key=value ...`` lines -> ``{NAME: {key: value}}`` (other lines skipped)."""
    result: dict[str, dict[str, str]] = {}
    for line in lines:
        if line.startswith("family "):
            _, name, *settings = line.split()
            result[name] = dict(item.split("=", 1) for item in settings)
    return result


class HBaseTableTool:
    """HBase Admin calls against the HBase of the local stack in ``state_dir``."""

    def __init__(self, state_dir: Path) -> None:
        self.conf_dir = hbase_home(Path(state_dir)) / "conf"

    def run(self, *args: str, timeout_s: float = 180) -> list[str]:
        """Run one tool command; its stdout lines. RuntimeError with the tool's stderr on failure."""
        classes = _compiled_classes()
        first = [self.conf_dir] if classes is None else [classes, self.conf_dir]
        target = [str(SOURCE)] if classes is None else ["HBaseTableTool"]
        argv = [
            java_binary(),
            *JDK17_OPTIONS,
            f"-Dlog4j.configuration={(HERE / 'log4j.properties').as_uri()}",
            "-cp",
            classpath("hbase", *first),
            *target,
            *args,
        ]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s, check=False)
        if done.returncode != 0:
            causes = [
                line.strip()
                for line in done.stderr.splitlines()
                if "Exception" in line and not line.lstrip().startswith("at ")
            ]
            raise RuntimeError(
                f"HBaseTableTool {' '.join(args)} failed ({done.returncode}): "
                f"{' | '.join(causes[:4]) or 'no exception named'}\n{done.stderr[-3000:]}"
            )
        return done.stdout.splitlines()

    def create(
        self,
        table: str,
        family: str,
        *,
        keep_deleted_cells: bool,
        max_versions: int = 3,
        split_keys: Sequence[str] = (),
    ) -> dict[str, dict[str, str]]:
        """Create ``table`` with one family (KEEP_DELETED_CELLS TRUE or FALSE), pre-split at
        ``split_keys`` (``Bytes.toBytesBinary`` form; N keys make N+1 regions); returns the new
        table's families as :meth:`describe` does (read by the same JVM)."""
        lines = self.run(
            "create", table, family, str(keep_deleted_cells).lower(), str(max_versions), *split_keys
        )
        return _families(lines)

    def describe(self, table: str) -> dict[str, dict[str, str]]:
        """Per family: ``versions``, ``ttl``, ``keep_deleted_cells`` as HBase reports them."""
        return _families(self.run("describe", table))

    def major_compact(self, table: str, timeout_s: int = 120) -> None:
        """Flush, major-compact and wait until HBase reports the compaction finished (bounded)."""
        self.run("major-compact", table, str(timeout_s), timeout_s=timeout_s + 60)

    def raw_scan(self, table: str) -> list[RawCell]:
        """Every cell and delete marker of ``table``, all versions (HBase's raw scan order)."""
        cells = []
        for line in self.run("raw-scan", table):
            row, column, timestamp, kind, *value = line.split(" ", 4)
            cells.append(RawCell(row, column, int(timestamp), kind, value[0] if value else ""))
        return cells

    def servers(self, timeout_s: float = 60) -> list[str]:
        """The live region servers' names (``host,port,startcode``)."""
        return [line.split(" ", 1)[1] for line in self.run("servers", timeout_s=timeout_s)]

    def regions(self, table: str) -> list[Region]:
        """``table``'s regions in key order, each with the server hosting it (fresh from ``hbase:meta``)."""
        regions = []
        for line in self.run("regions", table):
            _, name, start, end, server = line.split("\t")
            regions.append(Region(name, start, end, server))
        return regions

    def split(self, table: str, row: str, timeout_s: int = 120) -> tuple[str, str]:
        """Split the region of ``table`` holding ``row`` at ``row``; returns once both daughters
        are open (bounded): their encoded names (left, right)."""
        line = self.run("split", table, row, str(timeout_s), timeout_s=timeout_s + 60)[-1]
        _, _parent, _, left, right = line.split()
        return left, right

    def move(self, table: str, region: str, server: str | None = None, timeout_s: int = 120) -> str:
        """Move ``region`` (encoded name) of ``table`` to ``server`` (None: where the master
        picks, another server); returns once it is open there: the server's name."""
        line = self.run("move", table, region, server or "any", str(timeout_s), timeout_s=timeout_s + 60)[-1]
        return line.split()[-1]
