"""The data of the browser walkthrough: one pipeline over a two-partition topic whose
records carry Kafka timestamps spread over three whole UTC days, and what each step must
leave in HBase.

Days are the three whole days before today (UTC), so a Backfill over the middle one
(``DAY``) selects a known subset; records sit on its edges (its first millisecond: in;
the last millisecond before it and the first millisecond after it: out).

=========  ==========================  =======================
partition  day before / DAY / after    offsets of DAY
=========  ==========================  =======================
0          0, 1 / 2, 3, 4 / 5          [2, 5)
1          0 / 1, 2 / 3, 4             [1, 3)
=========  ==========================  =======================
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import happybase

from tests.conftest import StackInfo

MS = timedelta(milliseconds=1)


@dataclass(frozen=True)
class Stamped:
    """One produced record: where it lands, its key and its Kafka CreateTime."""

    partition: int
    offset: int
    key: str
    moment: datetime

    @property
    def value(self) -> str:
        return json.dumps({"key": self.key, "day": self.moment.strftime("%Y-%m-%d")})


def days_before(now: datetime) -> tuple[datetime, datetime, datetime]:
    """Midnights (UTC) of the three whole days before ``now``'s day: (before, DAY, after)."""
    today = now.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    return today - timedelta(days=3), today - timedelta(days=2), today - timedelta(days=1)


def stamped_records(day: datetime) -> list[Stamped]:
    """The records around ``day`` (see the module doc), offsets in produce order."""
    before, after = day - timedelta(days=1), day + timedelta(days=1)
    moments = {
        0: [before + timedelta(hours=6), day - MS, day, day + timedelta(hours=12), after - MS, after],
        1: [before + timedelta(hours=1), day + timedelta(hours=1), day + timedelta(hours=20), after, after + timedelta(hours=3)],
    }
    return [
        Stamped(partition, offset, f"p{partition}-{offset}", moment)
        for partition, stamps in moments.items()
        for offset, moment in enumerate(stamps)
    ]


def in_day(records: list[Stamped], day: datetime) -> list[Stamped]:
    return [r for r in records if day <= r.moment < day + timedelta(days=1)]


def hbase_rows(records: list[Stamped]) -> dict[bytes, dict[bytes, bytes]]:
    """What the pipeline writes for ``records`` (column family ``d``, one column per JSON field)."""
    return {
        r.key.encode(): {b"d:key": r.key.encode(), b"d:day": r.moment.strftime("%Y-%m-%d").encode()}
        for r in records
    }


def scan(stack: StackInfo, table: str) -> dict[bytes, dict[bytes, bytes]]:
    connection = happybase.Connection(stack.hbase_host, stack.hbase_port)
    try:
        return {row: dict(cells) for row, cells in connection.table(table).scan()}
    finally:
        connection.close()


def recreate_table(stack: StackInfo, table: str) -> None:
    """Drop and create ``table`` empty: a rewrite of the same cells (same versions) shows only
    on an empty table (deleting rows would leave delete markers that hide older versions)."""
    connection = happybase.Connection(stack.hbase_host, stack.hbase_port)
    try:
        with contextlib.suppress(Exception):  # absent the first time
            connection.delete_table(table, disable=True)
        connection.create_table(table, {"d": {}})
    finally:
        connection.close()


def drop_table(stack: StackInfo, table: str) -> None:
    connection = happybase.Connection(stack.hbase_host, stack.hbase_port)
    try:
        with contextlib.suppress(Exception):
            connection.delete_table(table, disable=True)
    finally:
        connection.close()
