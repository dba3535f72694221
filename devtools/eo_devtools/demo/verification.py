"""Check a pipeline's end state against what was produced: the exactly-once invariants.

Shared by the demo, the end-to-end tests and the fault-injection suite. Reads only
through public interfaces: HBase over Thrift (happybase), the ledger, Kafka.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

import happybase

from airflow_provider_eo.config import PipelineSpec
from airflow_provider_eo.ledger import Ledger
from airflow_provider_eo.ledger.model.offsets import OffsetSource
from airflow_provider_eo.ledger.model.read_model import EpochFilter
from airflow_provider_eo.ledger.model.states import EpochKind, EpochState
from eo_devtools.demo.expected_state import JsonOracle, ProducedRecord, RecordOracle, Rows, fold_rows

TP = tuple[str, int]


@dataclass
class Verification:
    """Figures of one check; ``problems`` is empty when every invariant holds."""

    records_produced: int = 0
    hbase_rows: int = 0
    hbase_cells: int = 0
    epochs_committed: int = 0
    dead_letters: int = 0
    bad_records_produced: int = 0
    lag: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when no invariant was violated."""
        return not self.problems

    def to_dict(self) -> dict[str, Any]:
        """JSON-serializable figures."""
        return {**self.__dict__, "ok": self.ok}


def scan_table(connection: happybase.Connection, table: str) -> dict[bytes, dict[bytes, bytes]]:
    """Every visible row of ``table`` (latest version of each cell), 64 rows per Thrift call:
    rows may hold cells near the record size limit (1 MiB), and the Thrift server builds a
    call's whole answer in its heap."""
    return {row: dict(cells) for row, cells in connection.table(table).scan(batch_size=64)}


def verify_pipeline(
    spec: PipelineSpec,
    produced: Iterable[ProducedRecord],
    *,
    ledger: Ledger,
    offsets: OffsetSource,
    hbase: happybase.Connection,
    oracle: RecordOracle | None = None,
    fold: Callable[[list[ProducedRecord], Any], Rows] = fold_rows,
) -> Verification:
    """Compare HBase, the ledger and the consumer group with the produced records.

    ``oracle`` says what the pipeline's mapping makes of each record (default: the JSON
    mapping into the pipeline's family, :class:`JsonOracle`); ``fold`` the visible rows the
    records make under it (default: by offsets, :func:`fold_rows`).
    """
    records = list(produced)
    oracle = oracle or JsonOracle(spec.column_family)
    result = Verification(records_produced=len(records))
    result.bad_records_produced = sum(1 for r in records if oracle.is_bad(r))
    _check_hbase(result, spec, fold(records, oracle), hbase)
    _check_ledger(result, spec, ledger)
    _check_progress(result, spec, records, ledger, offsets)
    return result


def _check_hbase(
    result: Verification, spec: PipelineSpec, expected: dict[bytes, dict[bytes, bytes]], hbase: Any
) -> None:
    actual = scan_table(hbase, spec.hbase_table)
    result.hbase_rows = len(actual)
    result.hbase_cells = sum(len(cells) for cells in actual.values())
    missing = sorted(set(expected) - set(actual))
    extra = sorted(set(actual) - set(expected))
    wrong = sorted(row for row in set(expected) & set(actual) if expected[row] != actual[row])
    for label, rows in (("missing", missing), ("unexpected", extra), ("wrong cells in", wrong)):
        if rows:
            result.problems.append(f"HBase {spec.hbase_table}: {len(rows)} {label} rows, e.g. {rows[:3]}")
    if wrong:
        row = wrong[0]
        result.problems.append(f"row {row!r}: expected {expected[row]!r}, got {actual[row]!r}")


def _check_ledger(result: Verification, spec: PipelineSpec, ledger: Ledger) -> None:
    open_epochs = ledger.open_epochs(spec.name)
    if open_epochs:
        result.problems.append(f"open epochs left: {[e.epoch_id for e in open_epochs]}")
    committed = ledger.epochs(
        EpochFilter(pipeline=spec.name, states=frozenset({EpochState.COMMITTED}), kind=EpochKind.STREAM)
    )
    result.epochs_committed = len(committed)
    by_partition: dict[TP, list[tuple[int, int]]] = defaultdict(list)
    for epoch in committed:
        for r in epoch.ranges:
            by_partition[r.tp].append((r.start, r.end))
    cursors = ledger.cursors(spec.name)
    gap_starts = {(g["topic"], g["partition"], g["start"]) for g in ledger.gaps(spec.name)}
    for tp, ranges in by_partition.items():
        ranges.sort()
        for (_, prev_end), (start, _) in pairwise(ranges):
            if start != prev_end and (tp[0], tp[1], prev_end) not in gap_starts:
                result.problems.append(
                    f"{tp[0]}[{tp[1]}]: committed ranges not contiguous at {prev_end}->{start}"
                )
        if ranges and cursors.get(tp) != ranges[-1][1]:
            result.problems.append(
                f"{tp[0]}[{tp[1]}]: cursor {cursors.get(tp)} != last committed end {ranges[-1][1]}"
            )
    result.dead_letters = ledger.dead_letter_count(spec.name)
    if spec.bad_records == "dead_letter" and result.dead_letters != result.bad_records_produced:
        result.problems.append(
            f"dead letters {result.dead_letters} != bad records produced {result.bad_records_produced}"
        )


def _check_progress(
    result: Verification,
    spec: PipelineSpec,
    records: list[ProducedRecord],
    ledger: Ledger,
    offsets: OffsetSource,
) -> None:
    ends: dict[TP, int] = {}
    for r in records:
        ends[(r.topic, r.partition)] = max(ends.get((r.topic, r.partition), 0), r.offset + 1)
    cursors = ledger.cursors(spec.name)
    group = offsets.committed_offsets(spec.group_id, list(ends))
    for tp, end in sorted(ends.items()):
        cursor = cursors.get(tp, 0)
        result.lag += max(0, end - cursor)
        if cursor != end:
            result.problems.append(f"{tp[0]}[{tp[1]}]: ledger cursor {cursor} != produced end {end}")
        if group.get(tp) != cursor:
            result.problems.append(
                f"{tp[0]}[{tp[1]}]: group {spec.group_id} offset {group.get(tp)} != cursor {cursor}"
            )
