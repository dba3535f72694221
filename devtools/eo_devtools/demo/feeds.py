"""What the demo produces to each of its pipelines, and the oracle that checks it.

A :class:`DemoFeed` pairs the (key, value) pairs one demo run produces with the
:class:`~eo_devtools.demo.expected_state.RecordOracle` built from every record the topic
holds (the oracle of an Avro topic needs the writer schemas of all of them).
:func:`json_feed` feeds ``demo_events`` (:mod:`eo_devtools.demo.sample_events`);
:func:`avro_feed` feeds ``demo_orders_avro`` (:mod:`eo_devtools.demo.avro_events`), whose
columns come from the served pipelines file itself (the mapping the pipeline runs with);
:func:`cdc_feed` feeds ``demo_customers_cdc`` (:mod:`eo_devtools.demo.cdc_events`), whose
oracle folds change events by their log position (``fold``) instead of by offsets.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from confluent_kafka.schema_registry import SchemaRegistryClient

from eo_devtools.demo.avro_events import UNKNOWN_SCHEMA_ID, order_events, serialized_events
from eo_devtools.demo.avro_expected_state import AvroOracle, schema_id_of
from eo_devtools.demo.cdc_events import change_events, registered_envelope, serialized_changes
from eo_devtools.demo.cdc_expected_state import CdcOracle, fold_changes
from eo_devtools.demo.expected_state import JsonOracle, ProducedRecord, RecordOracle, Rows, fold_rows
from eo_devtools.demo.registry_schemas import registered_serializers, writer_schemas
from eo_devtools.demo.sample_events import sample_events

Events = Iterator[tuple[bytes | None, bytes | None]]


@dataclass(frozen=True)
class DemoFeed:
    """``events(topic)``: what to produce this run; ``oracle(records)``: the checks' oracle for
    every record of the topic (raises RuntimeError when it cannot be built); ``fold``: the
    visible rows the records make under that oracle."""

    events: Callable[[str], Events]
    oracle: Callable[[list[ProducedRecord]], RecordOracle]
    fold: Callable[[list[ProducedRecord], Any], Rows] = fold_rows


def json_feed(family: str, count: int) -> DemoFeed:
    """``count`` JSON sample events; the default JSON mapping's oracle."""
    return DemoFeed(lambda _topic: sample_events(count), lambda _records: JsonOracle(family))


def mapping_columns(pipelines_file: Path, pipeline: str) -> Mapping[str, str] | None:
    """``mapping.columns`` of ``pipeline`` as the YAML file states it (None when absent).

    Raises KeyError when the file has no such pipeline."""
    document = yaml.safe_load(pipelines_file.read_text())
    for entry in document.get("pipelines", []):
        if entry.get("name") == pipeline:
            columns = (entry.get("mapping") or {}).get("columns")
            return {str(k): str(v) for k, v in columns.items()} if columns else None
    raise KeyError(f"{pipelines_file}: no pipeline {pipeline!r}")


def avro_feed(family: str, columns: Mapping[str, str] | None, registry_url: str, count: int) -> DemoFeed:
    """``count`` Avro orders (v1 and v2 registered first); the Avro oracle with the writer
    schemas of every id the topic names."""
    client = SchemaRegistryClient({"url": registry_url})

    def events(topic: str) -> Events:
        v1, v2 = registered_serializers(client, topic)
        return serialized_events(order_events(count), v1, v2)

    def oracle(records: list[ProducedRecord]) -> RecordOracle:
        schemas = writer_schemas(client, records)
        lost = {schema_id_of(r.value) for r in records} - set(schemas) - {None, UNKNOWN_SCHEMA_ID}
        if lost:
            raise RuntimeError(
                f"the topic's records name schema ids {sorted(i for i in lost if i is not None)} the "
                f"registry at {registry_url} does not know: the stack's registry keeps schemas in memory "
                "and was restarted since they were produced; delete the topic and the table, then rerun"
            )
        return AvroOracle(family, columns, schemas)

    return DemoFeed(events, oracle)


def cdc_feed(family: str, registry_url: str, count: int) -> DemoFeed:
    """About ``count`` Debezium-shaped Avro change events (the envelope schema registered
    first); the CDC oracle with the writer schemas of every id the topic names."""
    client = SchemaRegistryClient({"url": registry_url})

    def events(topic: str) -> Events:
        return serialized_changes(change_events(count), registered_envelope(client, topic))

    def oracle(records: list[ProducedRecord]) -> RecordOracle:
        return CdcOracle(family, writer_schemas(client, records))

    return DemoFeed(events, oracle, fold_changes)
