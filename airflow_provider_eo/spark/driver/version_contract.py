"""The offset-version contract, where an epoch shows it broken: one warning per epoch.

Offset versions (``mapping.version: offset``, the default) are only correct while all
records of one row live in one partition: versions of two partitions are unrelated
numbers, so an older record in a partition with higher offsets wins over a newer one
(docs/ARCHITECTURE.md "Cell versions"). Keying the Kafka records by row key keeps that
contract; the product can see it broken when all of these hold:

* versions come from offsets;
* the row key is a template that does not use the Kafka key (``{key}`` or ``{key.x}``),
  so one row's records may sit in any partition;
* the epoch reads more than one partition (of one topic or of several), non-empty ranges only.

:func:`offset_version_warning` is that rule, pure: the driver logs its text, when there
is one, once per epoch. What the product cannot see (two pipelines or two topics keyed by
the Kafka key feeding the same rows) is documented in docs/spark.md, not warned about.
"""

from __future__ import annotations

from collections.abc import Iterable

from airflow_provider_eo.config.specs import MappingSpec
from airflow_provider_eo.ledger.model.epoch import PartitionRange


def offset_version_warning(
    pipeline: str, epoch_id: int, mapping: MappingSpec, ranges: Iterable[PartitionRange]
) -> str | None:
    """The warning text when this epoch can break the offset-version contract, else None."""
    if mapping.version_field is not None or mapping.row_key_includes_kafka_key:
        return None
    row_key = mapping.row_key
    partitions = sorted({r.tp for r in ranges if r.end > r.start})
    if len(partitions) < 2:
        return None
    topics = sorted({topic for topic, _ in partitions})
    return (
        f"pipeline={pipeline} epoch_id={epoch_id}: cell versions are Kafka offsets, but the row key "
        f"template {row_key!r} does not use the Kafka key and this epoch reads {len(partitions)} "
        f"partitions (topics: {', '.join(topics)}): a row fed from two partitions gets versions that "
        "are unrelated offsets, so an older record can hide a newer one; fix: set "
        "'mapping.version: field:<a monotonic field>' (an event time or a CDC log position), or key "
        "the Kafka records by row and put {key} in the row key (docs/spark.md, 'Versions from a field')"
    )
