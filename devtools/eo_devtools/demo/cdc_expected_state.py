"""An oracle for the demo's CDC pipeline (``envelope: debezium``, ``version: field:source.lsn``):
the state of the database table, restated from the documented contract (docs/formats.md,
"Change-data-capture envelopes"), independent of the provider's decoders and mapper.

Records are Debezium envelopes in Avro (the Confluent wire format, decoded with fastavro
against the writer schema). Bad: an op other than ``c``/``u``/``d``/``r`` (a truncate
included: the pipeline refuses truncates), a missing ``source.lsn``, a ``c``/``u``/``r``
without ``after``, or a value that does not decode. A tombstone (null value) is skipped.

:func:`fold_changes` is the visible table: per row (``after.id``, else ``before.id``, as
decimal text), the winning event is the one ranked highest by (streamed before snapshot
read, then LSN, then put above delete); a winning delete means no row, a winning put its
``after`` image (``id``, ``name``, ``tier``) plus the ``op`` and ``lsn`` metadata cells.
Every image holds every column, so the winner's cells are the row's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from eo_devtools.demo.avro_expected_state import decode_wire, encode_cell
from eo_devtools.demo.expected_state import ProducedRecord, Rows

OPS = ("c", "u", "d", "r")
COLUMNS = ("id", "name", "tier")


@dataclass(frozen=True)
class CdcOracle:
    """:class:`eo_devtools.demo.expected_state.RecordOracle` of the CDC pipeline."""

    family: str
    schemas: Mapping[int, Any]

    def event(self, record: ProducedRecord) -> dict[str, Any]:
        """The decoded envelope of a record with a value; ValueError when it is bad."""
        assert record.value is not None
        envelope = decode_wire(record.value, self.schemas)
        op = envelope.get("op")
        if op not in OPS:
            raise ValueError(f"op {op!r}")
        if envelope["source"].get("lsn") is None:
            raise ValueError("no source.lsn")
        if op != "d" and envelope.get("after") is None:
            raise ValueError(f"op {op!r} without after")
        return envelope

    def is_bad(self, record: ProducedRecord) -> bool:
        """A value that does not decode, or a bad change event (module docstring)."""
        if record.value is None:
            return False
        try:
            self.event(record)
        except ValueError:
            return True
        return False

    def cells(self, record: ProducedRecord) -> dict[bytes, bytes]:
        """The cells of a put event: the ``after`` columns, ``op`` and ``lsn``."""
        envelope = self.event(record)
        values = {name: envelope["after"][name] for name in COLUMNS}
        values.update(op=envelope["op"], lsn=envelope["source"]["lsn"])
        return {f"{self.family}:{name}".encode(): encode_cell(value) for name, value in values.items()}


def fold_changes(records: Iterable[ProducedRecord], oracle: CdcOracle) -> Rows:
    """The visible rows the change events make (module docstring)."""
    winners: dict[bytes, tuple[tuple[int, int, int], ProducedRecord, bool]] = {}
    for record in records:
        if record.value is None or oracle.is_bad(record):
            continue
        envelope = oracle.event(record)
        op, image = envelope["op"], envelope["after"] or envelope["before"]
        row = str(image["id"]).encode()
        rank = (0 if op == "r" else 1, envelope["source"]["lsn"], 0 if op == "d" else 1)
        if row not in winners or rank > winners[row][0]:
            winners[row] = (rank, record, op == "d")
    return {row: oracle.cells(record) for row, (_, record, deleted) in winners.items() if not deleted}
