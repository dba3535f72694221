"""Many pipelines on one ledger (issue 25): 100 pipelines of 64 partitions each reserving
and committing concurrently from 8 processes against the stack's PostgreSQL.

The driver is :mod:`benchmarks.pipeline_fleet` and :mod:`benchmarks.fleet_epoch` (the real
protocol with the operators' ``EoKafkaHook``, one fresh hook per reserve and per commit,
its reads sharing one admin client as in the operators' ``open_protocol``);
the ledger is a scratch database on the stack's PostgreSQL. The watermarks come from real
topics on the stack's broker, one topic of 64 partitions per pipeline (6,400 partitions;
their creation time is reported), so each reserve asks the broker what the operators ask
it; the broker's share of each step is measured apart (``*_broker_ms``) so the ledger's
own share is known.

Reported under ``many_pipelines``: epochs per second (all epochs over the wall time from
the start barrier to the last worker's end), p50/p99 of reserve + commit (and of the
steady epochs, those after each pipeline's first which pins its partitions), the ledger's
and the broker's medians, lock waits sampled from ``pg_stat_activity`` every 10 ms
(:mod:`benchmarks.ledger_contention`), the database's deadlock count and the rolled-back
transactions the driver had to retry (by SQLSTATE) and the worker processes that crashed
and were replaced (``worker_crashes``: by exit code, -11 a segfault), the ledger's tables' growth per
epoch, and the invariants of the ledger afterwards (no overlapping ranges, cursors at
the end of each pipeline's last committed range, every epoch COMMITTED).
"""

from __future__ import annotations

import logging
import os
import statistics
from typing import Any

import psycopg2

from benchmarks.fleet_epoch import EpochSample
from benchmarks.fleet_topics import fleet_topics
from benchmarks.ledger_contention import WaitSampler, database_counters, server_settings, table_sizes
from benchmarks.pipeline_fleet import Fleet, run_fleet
from benchmarks.scratch_resources import scratch_database
from eo_devtools.stack.stack import LocalStack

PIPELINES, PARTITIONS, PROCESSES = 100, 64, 8

# Committed ranges of one pipeline and topic-partition that overlap another (none allowed).
OVERLAPS = """
SELECT count(*) FROM eo.epoch_ranges a JOIN eo.epochs ea USING (epoch_id),
                     eo.epoch_ranges b JOIN eo.epochs eb USING (epoch_id)
 WHERE ea.pipeline = eb.pipeline AND a.topic = b.topic AND a."partition" = b."partition"
   AND a.epoch_id < b.epoch_id AND ea.state = 'COMMITTED' AND eb.state = 'COMMITTED'
   AND a.end_offset > a.start_offset AND b.end_offset > b.start_offset
   AND int8range(a.start_offset, a.end_offset) && int8range(b.start_offset, b.end_offset)
"""
# Partitions whose cursor is not the end of the pipeline's last committed range there.
CURSOR_MISMATCHES = """
SELECT count(*) FROM eo.partitions p
 WHERE p.cursor_offset IS DISTINCT FROM (
       SELECT max(r.end_offset) FROM eo.epoch_ranges r JOIN eo.epochs e USING (epoch_id)
        WHERE e.pipeline = p.pipeline AND e.state = 'COMMITTED'
          AND r.topic = p.topic AND r."partition" = p."partition")
"""


def run(stack: LocalStack, *, quick: bool) -> dict[str, Any]:
    """Measure; returns ``{"many_pipelines": {...}}``. Leaves no topic or database behind."""
    epochs = 5 if quick else 20
    for name in ("airflow_provider_eo", "airflow.task.hooks"):  # per-epoch log lines: not the point
        logging.getLogger(name).setLevel(logging.WARNING)
    with (
        fleet_topics(stack.kafka_bootstrap, PIPELINES, PARTITIONS, records=epochs) as topics,
        scratch_database(stack.ledger_dsn) as dsn,
    ):
        fleet = Fleet(dsn, stack.conn_env(), topics.specs, epochs, PROCESSES)
        before = database_counters(dsn)
        load_before = os.getloadavg()[0]
        with WaitSampler(dsn) as sampler:
            result = run_fleet(fleet)
        load_after = os.getloadavg()[0]
        after = database_counters(dsn)
        invariants = ledger_invariants(dsn)
        sizes = table_sizes(dsn)
        settings = server_settings(dsn)
    committed = invariants["committed"]
    return {
        "many_pipelines": {
            "pipelines": PIPELINES,
            "partitions_per_pipeline": PARTITIONS,
            "processes": PROCESSES,
            "epochs_per_pipeline": epochs,
            "epochs": len(result.samples),
            "wall_s": round(result.wall_s, 1),
            "epochs_per_s": round(len(result.samples) / result.wall_s, 1),
            "reserve_commit_ms": latency(result.samples),
            "steady_reserve_commit_ms": latency([s for s in result.samples if s.round > 0]),
            "first_reserve_commit_ms": latency([s for s in result.samples if s.round == 0]),
            "slowest": slowest(result.samples),
            "lock_waits": sampler.summary(),
            "rolled_back_retried": result.rollbacks,
            "retries": result.retries,
            "worker_crashes": result.crashes,  # exit code -> workers replaced (a task's retry)
            "database": {key: after[key] - before[key] for key in after},
            "invariants": invariants,
            "tables": sizes,
            "bytes_per_epoch": round(sum(t["bytes"] for t in sizes.values()) / max(committed, 1)),
            "server": settings,
            "topics": {
                "partitions": PIPELINES * PARTITIONS,
                "create_s": topics.create_s,
                "produce_s": topics.produce_s,
            },
            "load_average": [round(load_before, 2), round(load_after, 2)],
        }
    }


def latency(samples: list[EpochSample]) -> dict[str, float]:
    """p50/p99/max of reserve + commit, and the medians of each step and its broker share."""
    if not samples:
        return {}
    totals = sorted(s.total_ms for s in samples)
    return {
        "count": len(samples),
        "p50": round(statistics.median(totals), 1),
        "p99": round(percentile(totals, 0.99), 1),
        "max": round(totals[-1], 1),
        "reserve_p50": round(statistics.median(s.reserve_ms for s in samples), 1),
        "reserve_broker_p50": round(statistics.median(s.reserve_broker_ms for s in samples), 1),
        "commit_p50": round(statistics.median(s.commit_ms for s in samples), 1),
        "commit_broker_p50": round(statistics.median(s.commit_broker_ms for s in samples), 1),
        "ledger_p50": round(
            statistics.median(s.total_ms - s.reserve_broker_ms - s.commit_broker_ms for s in samples), 1
        ),
        "reserve_p99": round(percentile(sorted(s.reserve_ms for s in samples), 0.99), 1),
        "reserve_broker_p99": round(percentile(sorted(s.reserve_broker_ms for s in samples), 0.99), 1),
        "commit_p99": round(percentile(sorted(s.commit_ms for s in samples), 0.99), 1),
        "commit_broker_p99": round(percentile(sorted(s.commit_broker_ms for s in samples), 0.99), 1),
        "over_1s": sum(1 for total in totals if total > 1000),
        "ledger_p99": round(
            percentile(sorted(s.total_ms - s.reserve_broker_ms - s.commit_broker_ms for s in samples), 0.99),
            1,
        ),
    }


def slowest(samples: list[EpochSample], count: int = 5) -> list[dict[str, Any]]:
    """The ``count`` slowest epochs: reserve, commit, the ledger's rest and each broker call."""
    return [
        {
            "round": s.round,
            "total_ms": round(s.total_ms, 1),
            "ledger_ms": round(s.total_ms - s.reserve_broker_ms - s.commit_broker_ms, 1),
            **s.calls,
        }
        for s in sorted(samples, key=lambda s: -s.total_ms)[:count]
    ]


def percentile(ordered: list[float], share: float) -> float:
    """The nearest-rank percentile of the sorted ``ordered``."""
    rank = max(1, -(-len(ordered) * share // 1))
    return ordered[int(rank) - 1]


def ledger_invariants(dsn: str) -> dict[str, int]:
    """Counts of the ledger's state after the fleet: epochs by state, overlapping committed
    ranges and cursors that are not their last committed range's end (both must be 0)."""
    with psycopg2.connect(dsn) as conn, conn.cursor() as cur:
        cur.execute("SELECT state, count(*) FROM eo.epochs GROUP BY state")
        states = {str(state): int(n) for state, n in cur.fetchall()}
        cur.execute(OVERLAPS)
        overlaps = int((cur.fetchone() or (0,))[0])
        cur.execute(CURSOR_MISMATCHES)
        mismatches = int((cur.fetchone() or (0,))[0])
    conn.close()
    return {
        "committed": states.pop("COMMITTED", 0),
        "not_committed": sum(states.values()),
        "overlapping_ranges": overlaps,
        "cursor_mismatches": mismatches,
    }
