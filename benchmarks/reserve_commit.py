"""Reserve + commit latency by partition count and by epoch history (issue 13, item 1b).

Through the real protocol on the local stack: ``EpochProtocol.reserve_stream`` and
``EpochProtocol.commit`` with the ``EoKafkaHook`` the operators use (ledger transactions
plus broker calls; Airflow task start and the Spark write excluded; the writer's vote
happens between the two and is not counted). As in the operators, each reserve and each
commit gets a fresh hook, so connecting to the broker is counted (resolving the Airflow
connection is not). For each size N every partition holds a few records and the
pipeline takes one per partition per epoch, so each epoch has N non-empty ranges. The
first reservation (pinning N partitions) is reported apart; the figures are medians of
the following repetitions, each split into broker time (the hook's calls) and the rest
(ledger SQL and Python).

History: at 100 partitions, two pipelines on the same topics, each in its own ledger
database; one of them gets ``history_epochs`` COMMITTED stream epochs with a range on
every partition, bulk-inserted with SQL (not pruned). Their epochs are then measured
alternately, so both see the same machine load; ``reserve_commit_history_ratio`` is
with-history over without. ``legacy_cursor_query_ms`` times the cursor query stored
cursors replaced (a max over every committed range) on that history; ``plans`` says
which index answers each query of the reserve/commit path there (EXPLAIN).
"""

from __future__ import annotations

import logging
import statistics
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

from airflow_provider_eo.config import CapsSpec, PipelineSpec, StartingSpec
from airflow_provider_eo.hooks.kafka import EoKafkaHook
from airflow_provider_eo.ledger import EpochProtocol, Ledger
from airflow_provider_eo.ledger.model.runs import RunIdentity
from airflow_provider_eo.ledger.protocol.outcomes import Reserved
from benchmarks.ledger_history import insert_history, inspect
from benchmarks.scratch_resources import kafka_connection, scratch_database, scratch_topics
from eo_devtools.stack.stack import LocalStack

HISTORY_PARTITIONS = 100

#: One measured epoch: reserve and commit ms, and the broker's share of each.
Sample = dict[str, float]


class TimedHook(EoKafkaHook):
    """The operators' Kafka hook, adding up the wall time of its outermost broker calls."""

    def __init__(self) -> None:
        super().__init__()
        self.broker_ms = 0.0
        self._depth = 0

    @contextmanager
    def _timed(self) -> Iterator[None]:
        self._depth += 1
        started = time.perf_counter()
        try:
            yield
        finally:
            self._depth -= 1
            if self._depth == 0:
                self.broker_ms += (time.perf_counter() - started) * 1000

    def list_partitions(self, *args: Any, **kwargs: Any) -> Any:
        with self._timed():
            return super().list_partitions(*args, **kwargs)

    def watermarks(self, *args: Any, **kwargs: Any) -> Any:
        with self._timed():
            return super().watermarks(*args, **kwargs)

    def committed_offsets(self, *args: Any, **kwargs: Any) -> Any:
        with self._timed():
            return super().committed_offsets(*args, **kwargs)

    def offsets_for_timestamp(self, *args: Any, **kwargs: Any) -> Any:
        with self._timed():
            return super().offsets_for_timestamp(*args, **kwargs)

    def commit_offsets(self, *args: Any, **kwargs: Any) -> Any:
        with self._timed():
            return super().commit_offsets(*args, **kwargs)


def run(stack: LocalStack, *, quick: bool) -> dict[str, Any]:
    """Measure; returns ``reserve_commit_ms`` (by partition count), ``reserve_commit_detail``,
    ``reserve_commit_history_ratio``, ``history``, ``per_partition_us``, ``linearity`` and
    ``plans``. Leaves no topic or database behind."""
    sizes = [100, 1000] if quick else [100, 1000, 10000]
    reps = 3 if quick else 5
    history_epochs = 10_000 if quick else 100_000
    for name in ("airflow_provider_eo", "airflow.task.hooks"):  # per-partition log lines: not the point
        logging.getLogger(name).setLevel(logging.WARNING)
    detail: dict[str, dict[str, float]] = {}
    with (
        kafka_connection(stack),
        scratch_database(stack.ledger_dsn) as dsn,
        scratch_database(stack.ledger_dsn) as history_dsn,
        Ledger(dsn) as ledger,
        Ledger(history_dsn) as history_ledger,
    ):
        for size in sizes:
            with scratch_topics(stack.kafka_bootstrap, size, records=reps + 2) as topics:
                spec = _spec(f"bench-{size}", topics)
                first = _epoch(ledger, spec)
                detail[str(size)] = {**_medians([_epoch(ledger, spec) for _ in range(reps)]),
                                     "first_reserve_ms": round(first["reserve_ms"], 1)}  # fmt: skip
        with scratch_topics(stack.kafka_bootstrap, HISTORY_PARTITIONS, records=reps + 2) as topics:
            plain, aged = _spec("bench-plain", topics), _spec("bench-history", topics)
            _epoch(ledger, plain)  # pins
            _epoch(history_ledger, aged)
            insert_ms = insert_history(history_dsn, aged.name, history_epochs)
            pairs = [(_epoch(ledger, plain), _epoch(history_ledger, aged)) for _ in range(reps)]
            legacy_ms, plans = inspect(history_dsn, aged.name)
    totals = {size: d["reserve_ms"] + d["commit_ms"] for size, d in detail.items()}
    low, high = str(sizes[0]), str(sizes[-1])
    per_partition_us = (totals[high] - totals[low]) / (int(high) - int(low)) * 1000
    before, after = _medians([b for b, _ in pairs]), _medians([a for _, a in pairs])
    ratio = (after["reserve_ms"] + after["commit_ms"]) / (before["reserve_ms"] + before["commit_ms"])
    return {
        "reserve_commit_ms": {size: round(ms, 1) for size, ms in totals.items()},
        "reserve_commit_detail": detail,
        "reserve_commit_history_ratio": round(ratio, 3),
        "per_partition_us": round(per_partition_us, 1),
        "linearity": {  # ms per partition at each size over that at the smallest (1.0 = linear)
            size: round((totals[size] / int(size)) / (totals[low] / int(low)), 3) for size in totals
        },
        "history": {
            "epochs": history_epochs,
            "partitions": HISTORY_PARTITIONS,
            "insert_s": round(insert_ms / 1000, 1),
            "ms_without": round(before["reserve_ms"] + before["commit_ms"], 1),
            "ms_with": round(after["reserve_ms"] + after["commit_ms"], 1),
            "ratio": round(ratio, 3),
            "reserve_ratio": round(after["reserve_ms"] / before["reserve_ms"], 3),
            "commit_ratio": round(after["commit_ms"] / before["commit_ms"], 3),
            "detail_without": before,
            "detail_with": after,
            "pairs_ms": [  # (without, with) reserve + commit of each alternation: the noise
                (round(b["reserve_ms"] + b["commit_ms"], 1), round(a["reserve_ms"] + a["commit_ms"], 1))
                for b, a in pairs
            ],
            "legacy_cursor_query_ms": round(legacy_ms, 1),
        },
        "plans": plans,
        "repetitions": reps,
    }


def _epoch(ledger: Ledger, spec: PipelineSpec) -> Sample:
    """Reserve, vote and commit one epoch of ``spec`` as the operators do (a fresh protocol
    and hook for the reserve and for the commit); the times of the reserve and the commit."""
    reserving = TimedHook()
    _ = reserving.settings  # the Airflow connection lookup is task start-up, not measured
    run = RunIdentity("bench", f"{spec.name}-{uuid.uuid4().hex[:8]}")
    started = time.perf_counter()
    with reserving.one_admin_client():  # as the operators' open_protocol does
        outcome = EpochProtocol(ledger, kafka=lambda: reserving).reserve_stream(spec, run)
    reserve_ms = (time.perf_counter() - started) * 1000
    if not isinstance(outcome, Reserved):
        raise RuntimeError(f"{spec.name}: nothing reserved ({outcome})")
    epoch = outcome.epoch
    if sum(1 for r in epoch.ranges if r.record_count) != spec.caps.max_records_total:
        raise RuntimeError(f"{spec.name}: epoch {epoch.epoch_id} does not cover every partition")
    ledger.vote_written(epoch.epoch_id, epoch.fencing_token, {})
    committing = TimedHook()
    _ = committing.settings
    started = time.perf_counter()
    with committing.one_admin_client():
        EpochProtocol(ledger, kafka=lambda: committing).commit(epoch.epoch_id, pipeline=spec)
    commit_ms = (time.perf_counter() - started) * 1000
    return {
        "reserve_ms": reserve_ms,
        "reserve_broker_ms": reserving.broker_ms,
        "commit_ms": commit_ms,
        "commit_broker_ms": committing.broker_ms,
    }


def _medians(samples: list[Sample]) -> dict[str, float]:
    """Median of each figure; ``*_ledger_ms`` is the rest of each step (SQL and Python)."""
    result = {key: statistics.median(s[key] for s in samples) for key in samples[0]}
    for step in ("reserve", "commit"):
        result[f"{step}_ledger_ms"] = statistics.median(
            s[f"{step}_ms"] - s[f"{step}_broker_ms"] for s in samples
        )
    return {key: round(value, 1) for key, value in result.items()}


def _spec(name: str, topics: list[tuple[str, int]]) -> PipelineSpec:
    """One record per partition per epoch (``max_records_total`` = the partition count)."""
    partitions = sum(count for _, count in topics)
    spec = PipelineSpec(
        name=f"{name}-{uuid.uuid4().hex[:6]}",
        topics=tuple(topic for topic, _ in topics),
        topic_pattern=None,
        group_id=f"bench-{uuid.uuid4().hex[:8]}",
        hbase_table="bench",
        column_family="d",
    )
    return replace(spec, starting=StartingSpec("earliest", None, "earliest"), caps=CapsSpec(1, partitions))
