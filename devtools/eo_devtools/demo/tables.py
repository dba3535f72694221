"""The demo's HBase tables, created the way the README advises.

The demo's topics carry tombstones, so each table's family is created with
``KEEP_DELETED_CELLS => 'TRUE'`` (a major compaction then keeps the delete markers, and a
replay of an older range cannot bring deleted cells back: README, docs/spark.md). HBase's
Thrift1 API cannot set it, so the tables are created through HBase's Java Admin API
(:class:`eo_devtools.stack.hbase_admin.HBaseTableTool`). A table that already exists is left
as it is: the outcome says so and reports the family's setting as HBase describes it.
"""

from __future__ import annotations

from dataclasses import dataclass

import happybase

from eo_devtools.stack.hbase_admin import HBaseTableTool

#: Versions kept per cell: what the demo's Thrift-created tables had (Thrift1's default).
MAX_VERSIONS = 3


@dataclass(frozen=True)
class TableOutcome:
    """What :func:`ensure_table` did: ``created`` or found existing, and the family's settings."""

    table: str
    family: str
    created: bool
    settings: dict[str, str]

    def describe(self) -> str:
        """One line for the demo's output."""
        kdc = self.settings.get("keep_deleted_cells", "no such family")
        if self.created:
            return f"created HBase table {self.table} (family {self.family}: KEEP_DELETED_CELLS {kdc})"
        advice = (
            ""
            if kdc == "TRUE"
            else f"; the README advises TRUE for families that take tombstones: in the HBase shell "
            f"alter '{self.table}', {{NAME => '{self.family}', KEEP_DELETED_CELLS => 'TRUE'}}"
        )
        return (
            f"HBase table {self.table} exists: left as it is "
            f"(family {self.family}: KEEP_DELETED_CELLS {kdc}){advice}"
        )


def ensure_table(
    tool: HBaseTableTool, hbase: happybase.Connection, table: str, family: str, *, takes_tombstones: bool
) -> TableOutcome:
    """Create ``table`` with one family ``family`` unless the table exists.

    ``takes_tombstones``: the family is created with KEEP_DELETED_CELLS TRUE (else FALSE,
    HBase's default). An existing table is never altered. Raises RuntimeError (from the tool)
    when HBase refuses the creation or the description.
    """
    if table.encode() in hbase.tables():
        return TableOutcome(table, family, False, tool.describe(table).get(family, {}))
    families = tool.create(table, family, keep_deleted_cells=takes_tombstones, max_versions=MAX_VERSIONS)
    return TableOutcome(table, family, True, families.get(family, {}))
