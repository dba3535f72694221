"""Validation of Thrift ``ColumnDescriptor`` into :class:`FamilySpec`, as HBase's ``colDescFromThrift``."""

from __future__ import annotations

from typing import Any

from airflow_provider_eo.devstack.hbase import errors
from airflow_provider_eo.devstack.hbase.model import FOREVER_TTL, FamilySpec, parse_column

COMPRESSIONS = {
    "none": "NONE",
    "gz": "GZ",
    "lzo": "LZO",
    "snappy": "SNAPPY",
    "lz4": "LZ4",
    "bzip2": "BZIP2",
    "zstd": "ZSTD",
}
BLOOM_TYPES = frozenset({"NONE", "ROW", "ROWCOL", "ROWPREFIX_FIXED_LENGTH"})


def _text(value: object, default: str) -> str:
    if value is None:
        return default
    return value.decode() if isinstance(value, bytes) else str(value)


def family_from_thrift(descriptor: Any) -> FamilySpec:
    """The family a ``ColumnDescriptor`` describes; IllegalArgument for invalid settings."""
    name = descriptor.name or b""
    if not name:
        raise errors.illegal_argument("column name is empty")
    family = parse_column(name)[0]
    if not family:
        raise errors.illegal_argument("column name is empty")
    compression = _text(descriptor.compression, "NONE")
    if compression.lower() not in COMPRESSIONS:
        raise errors.illegal_argument(
            "java.lang.IllegalArgumentException: Unsupported compression algorithm name: "
            f"{compression.lower()}"
        )
    bloom = _text(descriptor.bloomFilterType, "NONE")
    if bloom not in BLOOM_TYPES:
        raise errors.illegal_argument(
            "java.lang.IllegalArgumentException: No enum constant "
            f"org.apache.hadoop.hbase.regionserver.BloomType.{bloom}"
        )
    max_versions = 3 if descriptor.maxVersions is None else int(descriptor.maxVersions)
    if max_versions < 1:
        raise errors.illegal_argument(
            f"java.lang.IllegalArgumentException: Maximum versions must be positive (got {max_versions})"
        )
    ttl = -1 if descriptor.timeToLive is None else int(descriptor.timeToLive)
    return FamilySpec(
        name=family,
        max_versions=max_versions,
        compression=COMPRESSIONS[compression.lower()],
        in_memory=bool(descriptor.inMemory),
        bloom_filter_type=bloom,
        bloom_filter_vector_size=0,
        bloom_filter_nb_hashes=0,
        block_cache_enabled=bool(descriptor.blockCacheEnabled),
        time_to_live=ttl if ttl > 0 else FOREVER_TTL,
    )
