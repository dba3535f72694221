"""The mapping a pipeline spec runs, as a digest: what an epoch records and its writer must match.

Contract: :func:`spec_digest` is the sha256 (hex) of the canonical JSON (sorted keys, no spaces)
of :data:`MAPPING_FIELDS` of a :class:`~airflow_provider_eo.config.specs.PipelineSpec`: everything
that decides which cells, versions, dead letters and group offsets a range turns into. Left out,
because they change how or when a range is written but not what lands: where the spec came
from (``source_file``), the schedule, timeouts, waits, reservation caps, starting offsets, the
data-loss policy, backfill chunking and Spark's resources (``spark.split_size`` is in: with
``batch_size``/``batch_bytes`` it decides which versions of a row a range writes). The same YAML
with keys reordered or comments changed has the same digest; any change to a mapped field
gives another. The mapping fields added after digests were first recorded (``envelope``,
``truncate``, ``tombstone_version``: :data:`LATER_MAPPING_DEFAULTS`) are in the view only
when they differ from their defaults, so a spec that does not use them keeps the digest it
always had. Pure: reads nothing, raises nothing.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from airflow_provider_eo.config.specs import PipelineSpec

MAPPING_FIELDS = (
    "name",
    "topics",
    "topic_pattern",
    "group_id",
    "hbase_table",
    "column_family",
    "hbase_keyvalue_maxsize",
    "mapping",
    "bad_records",
    "dead_letters",
    "batch_size",
    "batch_bytes",
)
#: Mapping fields left out of the view at these values (digests recorded before they existed).
LATER_MAPPING_DEFAULTS: dict[str, Any] = {"envelope": "none", "truncate": "fail", "tombstone_version": None}
#: How many hex digits of a digest messages and pages show.
SHORT = 12


def mapping_view(spec: PipelineSpec) -> dict[str, Any]:
    """The part of ``spec.to_dict()`` the digest covers."""
    data = spec.to_dict()
    view = {name: data[name] for name in MAPPING_FIELDS}
    view["mapping"] = {
        key: value
        for key, value in view["mapping"].items()
        if key not in LATER_MAPPING_DEFAULTS or value != LATER_MAPPING_DEFAULTS[key]
    }
    view["split_size"] = data["spark"]["split_size"]
    return view


def spec_digest(spec: PipelineSpec) -> str:
    """The sha256 hex digest of :func:`mapping_view` as canonical JSON."""
    canonical = json.dumps(mapping_view(spec), sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


def short_digest(digest: str) -> str:
    """The first :data:`SHORT` hex digits, as messages name a mapping."""
    return digest[:SHORT]
