"""Kafka record -> HBase row mutation, as a pipeline's ``mapping`` section declares.

Modules: :mod:`.mapper` (the mapping and user functions), :mod:`.columns` (which cells),
:mod:`.cells` (their bytes), :mod:`.row_keys`, :mod:`.metadata` (Kafka metadata cells),
:mod:`.versions` (versions from a field), :mod:`.paths` (dotted paths into decoded
records). Decoders are :mod:`airflow_provider_eo.formats`'; ``BadRecord`` is
:mod:`airflow_provider_eo.errors`'.
"""

from __future__ import annotations

from airflow_provider_eo.errors import BadRecord
from airflow_provider_eo.spark.task.mapping.cells import encode_value
from airflow_provider_eo.spark.task.mapping.mapper import (
    FunctionMapping,
    RecordMapper,
    build_mapper,
    load_function,
)

__all__ = ["BadRecord", "FunctionMapping", "RecordMapper", "build_mapper", "encode_value", "load_function"]
