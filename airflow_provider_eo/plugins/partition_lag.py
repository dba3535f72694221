"""Lag per partition for the UI plugin: the ledger's cursors against Kafka's watermarks.

``lag = max(high_watermark - cursor, 0)`` per pinned partition, as ``eo-ledger lag``
computes it; ``high_watermark`` is the partition's last stable offset (``EoKafkaHook``
reads read_committed). For every partition a page or answer shows, a request makes two
Kafka calls whatever their number: ONE metadata call (which of these partitions still
exist) and ONE ``watermarks`` call for the existing ones. A partition whose topic is
gone (a retired pipeline, a deleted topic) is "not found": its lag alone is ``None``
("unknown") and its pipeline's ``lag_error`` names it. When a call fails (Kafka
unreachable, no connection), every lag is ``None`` and the reason is kept: the page
shows it in a banner, the JSON in ``lag_error``; nothing fails.

Import-light: the Kafka client is created only by the ``open_source`` callable.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from airflow_provider_eo.ledger.model.lag import lag as lag_of

log = logging.getLogger(__name__)

TP = tuple[str, int]
LAG_OFF = "lag is off ([eo] ui_kafka_conn_id is empty)"


class WatermarkReader(Protocol):
    """What lag needs of Kafka (``EoKafkaHook`` is one)."""

    def list_partitions(self, topics: Sequence[str] | None, pattern: str | None) -> list[TP]:
        """Partitions of the topics whose names fully match ``pattern`` (``topics`` None)."""
        ...

    def watermarks(self, tps: Iterable[TP]) -> dict[TP, tuple[int, int]]:
        """``(low, high)`` per partition."""
        ...


WatermarkSource = Callable[[], WatermarkReader | None]
"""Opens the reader at each request; None (or a None source) means lag is off."""


@dataclass(frozen=True)
class HighWatermarks:
    """The high watermark per partition; ``missing``: partitions Kafka does not have;
    ``error``: why none could be read."""

    by_partition: Mapping[TP, int] = field(default_factory=dict)
    missing: frozenset[TP] = frozenset()
    error: str | None = None


def read_high_watermarks(open_source: WatermarkSource | None, tps: Iterable[TP]) -> HighWatermarks:
    """One metadata call and one ``watermarks`` call for all of ``tps`` (none when
    empty); never raises. ``open_source`` None, or returning None, means lag is off."""
    wanted = sorted(set(tps))
    if not wanted:
        return HighWatermarks()
    try:
        reader = None if open_source is None else open_source()
        if reader is None:
            return HighWatermarks(error=LAG_OFF)
        names = "|".join(re.escape(topic) for topic in sorted({topic for topic, _ in wanted}))
        existing = set(reader.list_partitions(None, f"(?:{names})"))
        found = [tp for tp in wanted if tp in existing]
        marks = reader.watermarks(found) if found else {}
    except Exception as exc:  # any failure: lag unknown, the page and the API still answer
        log.warning("epoch ledger UI: high watermarks of %d partition(s) unavailable: %s", len(wanted), exc)
        return HighWatermarks(error=f"Kafka high watermarks unavailable: {type(exc).__name__}: {exc}".strip())
    return HighWatermarks(
        by_partition={tp: int(high) for tp, (_, high) in marks.items()},
        missing=frozenset(tp for tp in wanted if tp not in existing),
    )


def pipeline_partitions(pipelines: Iterable[Mapping[str, Any]]) -> set[TP]:
    """Every ``(topic, partition)`` among the ``cursors`` of these pipeline overviews."""
    return {(c["topic"], c["partition"]) for p in pipelines for c in p["cursors"]}


def with_lag(pipeline: Mapping[str, Any], highs: HighWatermarks) -> dict[str, Any]:
    """A pipeline overview (``PipelineOverview.to_json()``) with, per cursor, ``high_watermark``
    and ``lag`` (None when unknown), plus ``total_lag`` (None if any lag is unknown) and
    ``lag_error`` (the read's error, else the partitions not found in Kafka, else None)."""
    cursors, missing = [], []
    for cursor in pipeline["cursors"]:
        tp = (cursor["topic"], cursor["partition"])
        high = highs.by_partition.get(tp)
        lag = None if high is None else lag_of(cursor["cursor"], high)
        cursors.append({**cursor, "high_watermark": high, "lag": lag})
        if tp in highs.missing:
            missing.append(f"{tp[0]}[{tp[1]}]")
    lags = [c["lag"] for c in cursors]
    total = None if None in lags else sum(lags)
    error = highs.error or (f"not found in Kafka: {', '.join(missing)}" if missing else None)
    return {**pipeline, "cursors": cursors, "total_lag": total, "lag_error": error}
