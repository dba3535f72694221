"""Deterministic Debezium-shaped Avro change events for the demo's ``demo_customers_cdc`` pipeline.

A small simulated PostgreSQL table ``shop.public.customers`` (``id``, ``name``, ``tier``)
changes in log order (every event one LSN higher than the last): an initial snapshot (``r``
of every row), then inserts, updates, deletes each followed by its tombstone, re-inserts,
a **re-snapshot** half-way (``r`` of every live row with its state at that point), and a
few bad events (an unknown op, a missing ``source.lsn``, a truncate: the pipeline refuses
truncates). Kafka keys carry a shard suffix (``<id>#<n>``), so one row's changes spread over
the topic's partitions and reach the write step out of log order; the row key comes from
the images (``row_key: "{id}"``), so only the log position may order them.

:func:`change_events` says what to produce (pure and seeded); :func:`serialized_changes` turns
it into Kafka (key, value) pairs with the registered envelope schema (:func:`registered_envelope`).
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

_VALUE = {
    "type": "record",
    "name": "Value",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "name", "type": "string"},
        {"name": "tier", "type": "string"},
    ],
}
_SOURCE = {
    "type": "record",
    "name": "Source",
    "namespace": "io.debezium.connector.postgresql",
    "fields": [
        {"name": "connector", "type": "string"},
        {"name": "db", "type": "string"},
        {"name": "schema", "type": "string"},
        {"name": "table", "type": "string"},
        {"name": "ts_ms", "type": "long"},
        {"name": "txId", "type": ["null", "long"], "default": None},
        {"name": "lsn", "type": ["null", "long"], "default": None},
    ],
}
ENVELOPE_SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": "Envelope",
    "namespace": "shop.public.customers",
    "fields": [
        {"name": "before", "type": ["null", _VALUE], "default": None},
        {"name": "after", "type": ["null", "Value"], "default": None},
        {"name": "source", "type": _SOURCE},
        {"name": "op", "type": "string"},
        {"name": "ts_ms", "type": ["null", "long"], "default": None},
    ],
}
#: Bad events the demo produces, in turn: the pipeline dead-letters each.
BAD_OPS = ("x", "no_lsn", "t")
_BASE_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z


@dataclass(frozen=True)
class ChangeEvent:
    """One record to produce: its Kafka key and envelope (None: the tombstone after a delete)."""

    key: bytes
    envelope: dict[str, Any] | None


def _envelope(op: str, lsn: int | None, before: Any, after: Any) -> dict[str, Any]:
    source = {"connector": "postgresql", "db": "shop", "schema": "public", "table": "customers",
              "ts_ms": _BASE_MS + (lsn or 0), "txId": lsn, "lsn": lsn}  # fmt: skip
    return {"before": before, "after": after, "source": source, "op": op, "ts_ms": source["ts_ms"]}


def change_events(count: int, *, rows: int = 30, shards: int = 3, seed: int = 5) -> Iterator[ChangeEvent]:
    """About ``count`` events (the initial snapshot first, then changes; a re-snapshot half-way):
    ~55% updates, ~15% inserts, ~15% deletes with their tombstones, ~2% bad. LSNs start at 100."""
    rng = random.Random(seed)
    table: dict[int, dict[str, Any]] = {}
    lsn = 100
    produced = 0

    def key(row: int) -> bytes:
        return f"{row}#{rng.randrange(shards)}".encode()

    def snapshot() -> Iterator[ChangeEvent]:
        nonlocal lsn, produced
        for row in sorted(table):
            lsn += 1
            produced += 1
            yield ChangeEvent(key(row), _envelope("r", lsn, None, dict(table[row])))

    for row in range(rows // 2):
        table[row] = {"id": row, "name": f"c{row}-0", "tier": "free"}
    yield from snapshot()
    resnapshot_at, bad = count // 2, 0
    while produced < count:
        lsn += 1
        produced += 1
        if resnapshot_at and produced >= resnapshot_at:
            resnapshot_at = 0
            yield from snapshot()
            continue
        row = rng.randrange(rows)
        roll = rng.random()
        if roll < 0.02:
            kind = BAD_OPS[bad % len(BAD_OPS)]
            bad += 1
            image = {"id": row, "name": "bad", "tier": "bad"}
            op, position = ("u", None) if kind == "no_lsn" else (kind, lsn)
            yield ChangeEvent(key(row), _envelope(op, position, None, None if kind == "t" else image))
        elif row not in table:
            table[row] = {"id": row, "name": f"c{row}-{lsn}", "tier": rng.choice(["free", "pro"])}
            yield ChangeEvent(key(row), _envelope("c", lsn, None, dict(table[row])))
        elif roll < 0.2:
            gone = table.pop(row)
            shard_key = key(row)  # the tombstone follows its delete, under the same key
            yield ChangeEvent(shard_key, _envelope("d", lsn, dict(gone), None))
            produced += 1
            yield ChangeEvent(shard_key, None)
        else:
            before = dict(table[row])
            table[row] = {**before, "name": f"c{row}-{lsn}", "tier": rng.choice(["free", "pro", "team"])}
            yield ChangeEvent(key(row), _envelope("u", lsn, before, dict(table[row])))


Serialize = Callable[[dict[str, Any]], bytes]


def registered_envelope(client: SchemaRegistryClient, topic: str) -> Serialize:
    """Register the envelope schema under ``<topic>-value`` (idempotent); its serializer.

    Raises ``SchemaRegistryError`` when the registry refuses it."""
    client.register_schema(f"{topic}-value", Schema(json.dumps(ENVELOPE_SCHEMA), "AVRO"))
    conf = {"auto.register.schemas": False, "use.latest.version": True}
    serializer = AvroSerializer(client, json.dumps(ENVELOPE_SCHEMA), conf=conf)
    context = SerializationContext(topic, MessageField.VALUE)

    def serialize(envelope: dict[str, Any]) -> bytes:
        data = serializer(envelope, context)
        assert data is not None
        return data

    return serialize


def serialized_changes(
    events: Iterator[ChangeEvent], serialize: Serialize
) -> Iterator[tuple[bytes | None, bytes | None]]:
    """Kafka (key, value) pairs of ``events`` (a tombstone's value is None)."""
    for event in events:
        yield event.key, None if event.envelope is None else serialize(event.envelope)
