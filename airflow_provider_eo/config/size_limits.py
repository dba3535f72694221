"""The size limits of one pipeline, checked against each other (docs/spark.md "Sizing").

Four limits meet in a write task:

* ``mapping.max_record_bytes``: the largest record (key + value) the pipeline writes; a
  larger one is a bad record (dead letter, or the epoch fails under ``bad_records: fail``);
* ``batch_bytes``: the largest HBase write (one segment, one Thrift ``mutateRowsTs``
  call); a record heavier than it goes alone;
* ``hbase.keyvalue_maxsize``: the cluster's ``hbase.client.keyvalue.maxsize``, the
  largest cell HBase accepts; a record mapping to a larger cell is a bad record;
* the Kafka consumer's ``receive.message.max.bytes`` (the connection's ``extra``): the
  largest fetch response, hence the largest record batch a task can read.

:func:`check_pipeline_sizes` runs when a pipeline is parsed; :func:`check_consumer_sizes`
when the write application pairs the pipeline with its Kafka connection. Both raise
``PipelineConfigError`` naming the pipeline and the fields that contradict each other.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from airflow_provider_eo.config.config_errors import PipelineConfigError

if TYPE_CHECKING:
    from airflow_provider_eo.config.specs import PipelineSpec

#: The largest ``batch_bytes`` accepted: a Thrift server holds a few such calls in its heap.
MAX_BATCH_BYTES = 268_435_456
#: Bytes a KeyValue adds to its row, family, qualifier and value (HBase ``KeyValueUtil.length``).
KEYVALUE_OVERHEAD = 20
#: The longest row key HBase accepts (``HConstants.MAX_ROW_LENGTH``, ``Short.MAX_VALUE``).
MAX_ROW_BYTES = 32_767
#: librdkafka's ``receive.message.max.bytes`` default, and what it adds to ``fetch.max.bytes``.
RECEIVE_MESSAGE_MAX_BYTES = 100_000_000
FETCH_RESPONSE_OVERHEAD = 512
#: librdkafka's ``fetch.max.bytes`` default.
FETCH_MAX_BYTES = 52_428_800


def _fail(spec: PipelineSpec, field: str, problem: str) -> PipelineConfigError:
    return PipelineConfigError(spec.source_file or "<pipelines>", spec.name, field, problem)


def check_pipeline_sizes(spec: PipelineSpec) -> None:
    """Raise ``PipelineConfigError`` when a record within ``mapping.max_record_bytes`` could
    need a cell larger than ``hbase.keyvalue_maxsize`` (HBase would refuse it forever)."""
    record, cell = spec.mapping.max_record_bytes, spec.hbase_keyvalue_maxsize
    if record > cell:
        raise _fail(
            spec,
            "mapping.max_record_bytes",
            f"{record} is larger than hbase.keyvalue_maxsize ({cell}): a record within the limit could "
            "map to a cell HBase refuses; lower mapping.max_record_bytes, or raise hbase.keyvalue_maxsize "
            "together with the cluster's hbase.client.keyvalue.maxsize",
        )


def receive_message_max_bytes(consumer_config: Mapping[str, object]) -> int:
    """The largest fetch response a librdkafka consumer with this config accepts: its
    ``receive.message.max.bytes`` when set, else what librdkafka derives (at least
    ``fetch.max.bytes`` + 512). Raises ValueError for a value that is not an integer."""
    explicit = consumer_config.get("receive.message.max.bytes")
    if explicit is not None:
        return int(str(explicit))
    fetch = int(str(consumer_config.get("fetch.max.bytes", FETCH_MAX_BYTES)))
    return max(RECEIVE_MESSAGE_MAX_BYTES, fetch + FETCH_RESPONSE_OVERHEAD)


def check_consumer_sizes(spec: PipelineSpec, consumer_config: Mapping[str, object]) -> None:
    """Raise ``PipelineConfigError`` when a record within ``mapping.max_record_bytes`` cannot
    fit in one fetch response of the Kafka connection's consumer settings."""
    try:
        receive = receive_message_max_bytes(consumer_config)
    except ValueError as exc:
        raise _fail(spec, "mapping.max_record_bytes", f"the Kafka connection's fetch sizes: {exc}") from None
    record = spec.mapping.max_record_bytes
    if record + FETCH_RESPONSE_OVERHEAD > receive:
        raise _fail(
            spec,
            "mapping.max_record_bytes",
            f"{record} does not fit in the Kafka connection's receive.message.max.bytes ({receive}, of "
            f"which {FETCH_RESPONSE_OVERHEAD} bytes are protocol overhead): such records could never be "
            "fetched; raise receive.message.max.bytes in the connection's extra, or lower "
            "mapping.max_record_bytes",
        )
