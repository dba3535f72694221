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
import os
import statistics
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

import psycopg2
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from psycopg2 import sql
from psycopg2.extensions import make_dsn, parse_dsn

from airflow_provider_eo.config import CapsSpec, PipelineSpec, StartingSpec
from airflow_provider_eo.hooks.kafka import EoKafkaHook
from airflow_provider_eo.ledger import EpochProtocol, Ledger
from airflow_provider_eo.ledger.outcomes import Reserved
from airflow_provider_eo.ledger.recovery_plan import RunIdentity
from eo_devtools.stack.stack import LocalStack

PARTITIONS_PER_TOPIC = 1000
HISTORY_PARTITIONS = 100

# The cursor query before migration 0002: every committed stream range of the partition.
LEGACY_CURSORS = """
SELECT p.topic, p."partition",
       GREATEST(p.initial_offset,
                (SELECT max(r.end_offset) FROM eo.epoch_ranges r JOIN eo.epochs e USING (epoch_id)
                  WHERE e.pipeline = p.pipeline AND e.kind = 'stream' AND e.state = 'COMMITTED'
                    AND r.topic = p.topic AND r."partition" = p."partition"),
                (SELECT max(g.end_offset) FROM eo.gaps g
                  WHERE g.pipeline = p.pipeline AND g.topic = p.topic AND g."partition" = p."partition"))
  FROM eo.partitions p WHERE p.pipeline = %(pipeline)s
"""

# The reserve/commit path's queries whose cost could grow with history, as the store runs them.
PATH_QUERIES = {
    "cursors": 'SELECT topic, "partition", cursor_offset FROM eo.partitions WHERE pipeline = %(pipeline)s',
    "open_stream_epoch": "SELECT epoch_id FROM eo.epochs WHERE pipeline = %(pipeline)s"
    " AND state = ANY(ARRAY['RESERVED', 'WRITTEN']) AND kind = 'stream'",
    "run_own_epochs": "SELECT epoch_id FROM eo.epochs WHERE pipeline = %(pipeline)s AND kind = 'backfill'"
    " AND state = ANY(ARRAY['RESERVED', 'WRITTEN', 'COMMITTED']) AND dag_id = 'b' AND run_id = 'r'",
    "epoch_ranges": 'SELECT topic, "partition" FROM eo.epoch_ranges WHERE epoch_id = ANY(ARRAY[%(epoch)s])',
    "advance_cursors": "UPDATE eo.partitions p SET cursor_offset = r.end_offset"
    " FROM eo.epochs e JOIN eo.epoch_ranges r USING (epoch_id)"
    " WHERE e.epoch_id = %(epoch)s AND e.kind = 'stream' AND e.state = 'COMMITTED'"
    ' AND p.pipeline = e.pipeline AND p.topic = r.topic AND p."partition" = r."partition"'
    " AND p.cursor_offset < r.end_offset",
}

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
        _kafka_connection(stack),
        _database(stack.ledger_dsn) as dsn,
        _database(stack.ledger_dsn) as history_dsn,
        Ledger(dsn) as ledger,
        Ledger(history_dsn) as history_ledger,
    ):
        for size in sizes:
            with _topics(stack.kafka_bootstrap, size, records=reps + 2) as topics:
                spec = _spec(f"bench-{size}", topics)
                first = _epoch(ledger, spec)
                detail[str(size)] = {**_medians([_epoch(ledger, spec) for _ in range(reps)]),
                                     "first_reserve_ms": round(first["reserve_ms"], 1)}  # fmt: skip
        with _topics(stack.kafka_bootstrap, HISTORY_PARTITIONS, records=reps + 2) as topics:
            plain, aged = _spec("bench-plain", topics), _spec("bench-history", topics)
            _epoch(ledger, plain)  # pins
            _epoch(history_ledger, aged)
            insert_ms = _insert_history(history_dsn, aged.name, history_epochs)
            pairs = [(_epoch(ledger, plain), _epoch(history_ledger, aged)) for _ in range(reps)]
            legacy_ms, plans = _inspect(history_dsn, aged.name)
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
    EpochProtocol(ledger, kafka=lambda: committing).commit(epoch.epoch_id, group_id=spec.group_id)
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


def _insert_history(dsn: str, pipeline: str, epochs: int) -> float:
    """Bulk-insert ``epochs`` COMMITTED stream epochs of ``pipeline``, each with a range
    ``[0, 1)`` on every pinned partition (below every cursor); returns the ms it took."""
    started = time.perf_counter()
    with psycopg2.connect(dsn) as conn, conn.cursor() as cur:
        cur.execute(
            """
            WITH new AS (
                INSERT INTO eo.epochs (pipeline, kind, state, fencing_token, dag_id, run_id,
                                       created_at, written_at, committed_at)
                SELECT %(pipeline)s, 'stream', 'COMMITTED', gen_random_uuid(), 'history', 'h-' || i,
                       now(), now(), now()
                  FROM generate_series(1, %(epochs)s) AS i
                RETURNING epoch_id
            )
            INSERT INTO eo.epoch_ranges (epoch_id, topic, "partition", start_offset, end_offset)
            SELECT new.epoch_id, p.topic, p."partition", 0, 1
              FROM new CROSS JOIN eo.partitions p WHERE p.pipeline = %(pipeline)s
            """,
            {"pipeline": pipeline, "epochs": epochs},
        )
    conn.close()
    maintenance = psycopg2.connect(dsn)
    maintenance.autocommit = True  # VACUUM runs outside a transaction
    try:
        with maintenance.cursor() as cur:
            cur.execute("VACUUM ANALYZE eo.epochs")
            cur.execute("VACUUM ANALYZE eo.epoch_ranges")
    finally:
        maintenance.close()
    return (time.perf_counter() - started) * 1000


def _inspect(dsn: str, pipeline: str) -> tuple[float, dict[str, str]]:
    """The legacy cursor query's ms on the history, and the plan of each path query."""
    plans: dict[str, str] = {}
    with psycopg2.connect(dsn) as conn, conn.cursor() as cur:
        cur.execute("SELECT max(epoch_id) FROM eo.epochs WHERE pipeline = %s", (pipeline,))
        row = cur.fetchone()
        params = {"pipeline": pipeline, "epoch": row[0] if row else None}
        started = time.perf_counter()
        cur.execute(LEGACY_CURSORS, params)
        cur.fetchall()
        legacy_ms = (time.perf_counter() - started) * 1000
        for name, query in PATH_QUERIES.items():
            cur.execute("EXPLAIN " + query, params)
            plans[name] = " / ".join(line.strip() for (line,) in cur.fetchall() if "Scan" in line)
        conn.rollback()
    conn.close()
    return legacy_ms, plans


@contextmanager
def _kafka_connection(stack: LocalStack) -> Iterator[None]:
    """The stack's ``AIRFLOW_CONN_EO_KAFKA`` (and its other connections) set meanwhile."""
    saved = {name: os.environ.get(name) for name in stack.conn_env()}
    os.environ.update(stack.conn_env())
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@contextmanager
def _database(server_dsn: str) -> Iterator[str]:
    """A throwaway ledger database on the stack's PostgreSQL."""
    name = f"eo_bench_{uuid.uuid4().hex[:12]}"
    admin = psycopg2.connect(server_dsn)
    admin.autocommit = True
    try:
        with admin.cursor() as cur:
            cur.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        try:
            yield make_dsn(**{**parse_dsn(server_dsn), "dbname": name})
        finally:
            with admin.cursor() as cur:
                cur.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))
    finally:
        admin.close()


@contextmanager
def _topics(bootstrap: str, partitions: int, *, records: int) -> Iterator[list[tuple[str, int]]]:
    """``partitions`` partitions over topics of at most 1,000, ``records`` records in each;
    deleted afterwards."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    counts = [
        min(PARTITIONS_PER_TOPIC, partitions - start) for start in range(0, partitions, PARTITIONS_PER_TOPIC)
    ]
    topics = [(f"eo-bench-rc-{uuid.uuid4().hex[:8]}", count) for count in counts]
    small_index = {"segment.index.bytes": "65536", "segment.bytes": str(16 * 1024 * 1024)}
    try:
        for topic, count in topics:  # one at a time: KRaft refuses > 10,000 records per request
            futures = admin.create_topics(
                [NewTopic(topic, count, 1, config=small_index)], request_timeout=300
            )
            futures[topic].result(timeout=600)
        _await_metadata(admin, topics)
        _produce(bootstrap, topics, records)
        yield topics
    finally:
        for topic, _ in topics:
            _wait_quietly(admin.delete_topics([topic], request_timeout=300)[topic].result)


def _await_metadata(admin: AdminClient, topics: list[tuple[str, int]], timeout_s: float = 600) -> None:
    """Wait until the broker's metadata shows every partition of ``topics`` with a leader."""
    deadline = time.monotonic() + timeout_s
    while True:
        metadata = admin.list_topics(timeout=30).topics
        ready = all(
            topic in metadata
            and len(metadata[topic].partitions) == count
            and all(p.leader >= 0 for p in metadata[topic].partitions.values())
            for topic, count in topics
        )
        if ready:
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"benchmark topics not ready within {timeout_s:g}s")
        time.sleep(1)


def _produce(bootstrap: str, topics: list[tuple[str, int]], records: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 50, "acks": "all"})
    for topic, count in topics:
        for partition in range(count):
            for i in range(records):
                while True:
                    try:
                        producer.produce(topic, value=b'{"n": %d}' % i, key=b"k%d" % i, partition=partition)
                        break
                    except BufferError:  # the local queue is full: let deliveries drain it
                        producer.poll(0.5)
                producer.poll(0)
    if producer.flush(600) != 0:
        raise RuntimeError("benchmark records not delivered within 600 s")


def _wait_quietly(result: Callable[..., Any]) -> None:
    try:
        result(timeout=300)
    except Exception as exc:  # a topic left behind is logged, not fatal to the figures
        logging.getLogger(__name__).warning("benchmark topic not deleted: %s", exc)
