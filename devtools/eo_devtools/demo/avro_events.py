"""Deterministic Avro sample orders for the demo's ``demo_orders_avro`` pipeline.

Two versions of the ``Order`` value schema, registered in this order under the topic's
value subject (TopicNameStrategy: ``<topic>-value``), with the subject's compatibility set
explicitly to BACKWARD in between (registries' defaults differ; never rely on them):

* v1: ``order_id``, ``seq``, ``customer {id, country}``, ``amount`` (decimal(10, 2)),
  ``placed_at`` (timestamp-millis), ``status``, ``coupon``;
* v2: drops ``coupon`` and adds ``channel`` (default ``"web"``): a v2 reader reads v1 data.

:func:`order_events` says what to produce (pure and seeded); :func:`serialized_events` turns
it into Kafka (key, value) pairs with one serializer per version: v1 and v2 interleaved in
the same partitions, updates to the same keys, tombstones, and bad records of three kinds
(no magic byte, a schema id the registry does not know, a payload cut short).
:func:`registered_serializers` registers both versions and returns confluent-kafka's
``AvroSerializer`` for each.
"""

from __future__ import annotations

import datetime as dt
import json
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Literal

#: A schema id no registry of the demo assigns (registries count from 1).
UNKNOWN_SCHEMA_ID = 2_000_000_000

_CUSTOMER = {
    "type": "record",
    "name": "Customer",
    "fields": [{"name": "id", "type": "string"}, {"name": "country", "type": "string"}],
}
_COMMON_FIELDS: list[dict[str, Any]] = [
    {"name": "order_id", "type": "string"},
    {"name": "seq", "type": "long"},
    {"name": "customer", "type": _CUSTOMER},
    {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}},
    {"name": "placed_at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "status", "type": "string"},
]
SCHEMA_V1: dict[str, Any] = {
    "type": "record",
    "name": "Order",
    "namespace": "eo.demo",
    "fields": [*_COMMON_FIELDS, {"name": "coupon", "type": "string"}],
}
SCHEMA_V2: dict[str, Any] = {
    "type": "record",
    "name": "Order",
    "namespace": "eo.demo",
    "fields": [*_COMMON_FIELDS, {"name": "channel", "type": "string", "default": "web"}],
}

Kind = Literal["v1", "v2", "tombstone", "no_magic", "unknown_id", "truncated"]
BAD_KINDS: tuple[Kind, ...] = ("no_magic", "unknown_id", "truncated")
_EPOCH = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


@dataclass(frozen=True)
class OrderEvent:
    """One record to produce: its key, what kind it is, and the order (None for a tombstone)."""

    key: bytes
    kind: Kind
    order: dict[str, Any] | None


def value_subject(topic: str) -> str:
    """The value subject of ``topic`` under TopicNameStrategy."""
    return f"{topic}-value"


def _order(i: int, key: bytes, version: Kind, rng: random.Random) -> dict[str, Any]:
    order: dict[str, Any] = {
        "order_id": key.decode(),
        "seq": i,
        "customer": {"id": f"cust-{rng.randrange(100):03d}", "country": rng.choice(["DE", "FR", "IN", "US"])},
        "amount": Decimal(rng.randrange(0, 10_000_000)).scaleb(-2),  # 0.00 .. 99999.99, scale 2
        "placed_at": _EPOCH + dt.timedelta(milliseconds=rng.randrange(0, 86_400_000 * 365)),
        "status": rng.choice(["new", "paid", "shipped", "returned"]),
    }
    if version == "v1":
        order["coupon"] = rng.choice(["NONE", "WELCOME10", "SPRING"])
    else:
        order["channel"] = rng.choice(["web", "app", "store"])
    return order


def order_events(count: int, *, orders: int = 40, seed: int = 11) -> Iterator[OrderEvent]:
    """``count`` events over ``orders`` keys: ~2% bad (the three kinds in turn), ~4% tombstones,
    the rest updates, each v1 or v2 at random (so both versions interleave in every partition).
    Bad records carry a v1 order: what they would have been."""
    rng = random.Random(seed)
    bad = 0
    for i in range(count):
        key = f"order-{rng.randrange(orders):04d}".encode()
        roll = rng.random()
        if roll < 0.02:
            yield OrderEvent(key, BAD_KINDS[bad % len(BAD_KINDS)], _order(i, key, "v1", rng))
            bad += 1
        elif roll < 0.06:
            yield OrderEvent(key, "tombstone", None)
        else:
            version: Kind = "v1" if rng.random() < 0.5 else "v2"
            yield OrderEvent(key, version, _order(i, key, version, rng))


def serialized_events(
    events: Iterator[OrderEvent], v1: Callable[[dict[str, Any]], bytes], v2: Callable[[dict[str, Any]], bytes]
) -> Iterator[tuple[bytes | None, bytes | None]]:
    """Kafka (key, value) pairs of ``events``; ``v1``/``v2`` serialize an order in the Confluent
    wire format (magic byte 0, 4-byte big-endian schema id, Avro binary)."""
    for event in events:
        order = event.order
        if event.kind == "tombstone" or order is None:
            yield event.key, None
        elif event.kind == "v2":
            yield event.key, v2(order)
        elif event.kind == "no_magic":  # the order as JSON text: not the wire format
            yield event.key, json.dumps(order, default=str).encode()
        elif event.kind == "unknown_id":
            yield event.key, b"\x00" + UNKNOWN_SCHEMA_ID.to_bytes(4, "big") + v1(order)[5:]
        elif event.kind == "truncated":  # header and 3 payload bytes: order_id's string cut short
            yield event.key, v1(order)[:8]
        else:
            yield event.key, v1(order)
