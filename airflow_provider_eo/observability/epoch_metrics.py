"""A committed epoch's metrics, sent through Airflow's metrics (``airflow.sdk.observability.stats``).

Airflow decides where they go: ``[metrics] statsd_on`` (StatsD), ``statsd_datadog_enabled``
(DogStatsD), ``otel_on`` (OpenTelemetry), or nowhere. Called by the commit, recover and
release operators (task code, never on Spark executors) once per epoch *this* task committed: a
no-op re-commit sends nothing, so counters are never counted twice (they are at most once
per epoch; the ledger's epoch metrics are the exact record).

Each metric is sent under a dimensional name with tags (``pipeline``, ``kind``; lag adds
``topic`` and ``partition``), which DogStatsD, InfluxDB-style StatsD and OpenTelemetry
keep. Plain StatsD drops tags, so while ``[metrics] legacy_names_on`` is true (Airflow's
switch for exactly this; default true) each is also sent under a name carrying the
variables, as Airflow's own legacy names do: ``eo.epoch.records.<pipeline>``,
``eo.partition.lag.<pipeline>.<topic>.<partition>``; a ``.`` inside a variable becomes
``__`` so the name's hierarchy stays intact.

=====================  =======  ==========================================================
``eo.epoch.records``   counter  records read (every offset that held a record)
``eo.epoch.bytes``     counter  bytes of those records (key + value)
``eo.epoch.bad_records`` counter  records dead-lettered (bad_records: dead_letter)
``eo.epoch.skipped_offsets`` counter  offsets without a record (transaction markers, aborted
                                records, compaction holes)
``eo.epoch.cells``     counter  HBase cells written (puts and deletes)
``eo.epoch.duration``  timer    reservation to commit (ledger ``created_at`` -> ``committed_at``), ms
``eo.partition.lag``   gauge    stream epochs only: the partition's high watermark minus the
                                committed end offset, right after the commit
=====================  =======  ==========================================================

The lag comes from the watermarks the commit itself read for the ledger's commit lag sample
(``ledger/protocol/commit_path.py``; the Epochs page's lag chart): no second broker call.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from airflow.sdk.configuration import conf
from airflow.sdk.observability import stats

from airflow_provider_eo.ledger.model.epoch import Epoch
from airflow_provider_eo.ledger.model.lag import commit_sample
from airflow_provider_eo.ledger.model.offsets import TopicPartition
from airflow_provider_eo.ledger.protocol import Committed

log = logging.getLogger(__name__)

#: counter name -> key of the write step's vote metrics (``spark/driver/task_plan.py``, ``aggregate_metrics``)
COUNTERS = {
    "eo.epoch.records": "records",
    "eo.epoch.bytes": "bytes",
    "eo.epoch.bad_records": "bad_records",
    "eo.epoch.skipped_offsets": "skipped_offsets",
    "eo.epoch.cells": "cells_written",
}
DURATION = "eo.epoch.duration"
LAG = "eo.partition.lag"


def emit_epoch_metrics(epoch: Epoch, lag: Mapping[TopicPartition, int]) -> None:
    """Send ``epoch``'s counters and duration, and ``lag`` per partition (see the module doc)."""
    legacy = conf.getboolean("metrics", "legacy_names_on", fallback=True)
    tags = {"pipeline": epoch.pipeline, "kind": epoch.kind.value}
    metrics = epoch.metrics or {}
    pipeline = legacy_name_part(epoch.pipeline)
    for name, key in COUNTERS.items():
        count = int(metrics.get(key, 0))
        stats.incr(name, count, tags=tags)
        if legacy:
            stats.incr(f"{name}.{pipeline}", count)
    if epoch.committed_at is not None:
        duration = epoch.committed_at - epoch.created_at
        stats.timing(DURATION, duration, tags=tags)
        if legacy:
            stats.timing(f"{DURATION}.{pipeline}", duration)
    for (topic, partition), value in sorted(lag.items()):
        stats.gauge(LAG, value, tags={**tags, "topic": topic, "partition": str(partition)})
        if legacy:
            stats.gauge(f"{LAG}.{pipeline}.{legacy_name_part(topic)}.{partition}", value)
    log.info(
        "metrics sent pipeline=%s epoch_id=%s ranges=%s records=%s lag=%s",
        epoch.pipeline, epoch.epoch_id, epoch.ranges_brief, metrics.get("records"),
        ",".join(f"{t}[{p}]={v}" for (t, p), v in sorted(lag.items())),
    )  # fmt: skip


def report_committed(committed: Committed) -> None:
    """Emit the metrics of an epoch this call committed (a no-op re-commit: nothing), with
    the lag per partition from the watermarks the commit read. Never raises: the epoch is
    committed whatever happens here (a failure is a warning)."""
    if committed.already_committed:
        return
    epoch = committed.epoch
    try:
        sample = commit_sample(epoch, committed.high_watermarks)  # the lag the commit path stored
        lag = {(p.topic, p.partition): p.lag for p in sample.partitions} if sample else {}
        emit_epoch_metrics(epoch, lag)
    except Exception as exc:
        log.warning("metrics not sent pipeline=%s epoch_id=%s: %s", epoch.pipeline, epoch.epoch_id, exc)


def legacy_name_part(value: str) -> str:
    """A variable inside a legacy stat name: ``.`` -> ``__`` (as Airflow's legacy names do);
    the audit's metrics (``observability/audit_metrics.py``) name theirs the same way."""
    return stats.normalize_name_for_stats(value.replace(".", "__"), log_warning=False)
