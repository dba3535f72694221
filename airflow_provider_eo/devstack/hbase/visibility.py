"""Which stored cells a read sees: TTL, max_versions, time range, requested versions.

Order of evaluation (the steady state of HBase after a flush): expired cells
(family TTL) are invisible; per column only the newest ``max_versions`` versions
exist; of those, the read keeps versions with ``ts < time_upper_bound`` and
returns at most ``versions`` of them, newest first. Delete markers were applied
when written (see ``storage``), so stored cells are never masked here.
"""

from __future__ import annotations

from collections.abc import Iterable

from airflow_provider_eo.devstack.hbase.model import LATEST_TIMESTAMP, Cell, ColumnSelection, FamilySpec


def visible_cells(
    cells: Iterable[Cell],
    families: dict[bytes, FamilySpec],
    selection: ColumnSelection,
    now_ms: int,
    time_upper_bound: int = LATEST_TIMESTAMP,
    versions: int = 1,
) -> list[Cell]:
    """Visible cells of one row in (family, qualifier, ts desc) order.

    ``cells`` must be one row's cells in (family, qualifier, ts desc) order.
    """
    result: list[Cell] = []
    current: tuple[bytes, bytes] | None = None
    existing = 0
    returned = 0
    spec: FamilySpec | None = None
    cutoff = 0
    for cell in cells:
        key = (cell.family, cell.qualifier)
        if key != current:
            current = key
            existing = 0
            returned = 0
            if spec is None or spec.name != cell.family:
                spec = families.get(cell.family)
                cutoff = spec.oldest_unexpired_ts(now_ms) if spec is not None else 0
        if spec is None or cell.ts < cutoff:
            continue
        existing += 1
        if existing > spec.max_versions:
            continue
        if cell.ts >= time_upper_bound or returned >= versions:
            continue
        if not selection.matches(cell.family, cell.qualifier):
            continue
        returned += 1
        result.append(cell)
    return result
