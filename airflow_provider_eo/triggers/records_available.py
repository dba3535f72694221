"""RecordsAvailableTrigger: wait in the triggerer until a stream reservation has work.

Runs in Airflow's triggerer while :class:`~airflow_provider_eo.operators.wait.WaitForRecordsOperator`
is deferred: no worker slot is held and no Spark job exists. Every ``poll_interval``
seconds it applies :func:`~airflow_provider_eo.ledger.planning.new_records.pending_records` to
:func:`~airflow_provider_eo.ledger.protocol.read_positions` (the ledger's
cursors against the broker's read_committed high watermarks) and fires one event:

* ``{"status": "records", **PendingRecords.to_json()}`` as soon as the run should reserve;
* ``{"status": "timeout", "pipeline", "pending": 0, "waited_seconds"}`` once ``deadline``
  (epoch seconds, absolute: a trigger moved to another triggerer keeps it) has passed
  with nothing to read (a last check is made at the deadline);

Polls store lag samples in the ledger from the same reads (the Epochs page's lag chart,
``observability/lag_sampling.py``: the first poll, the one that finds records, and one
every few minutes between; a sample that cannot be stored is a warning, never a failure).

A failing check (ledger or broker unreachable, a topic missing) raises out of ``run``:
Airflow fails the deferred task with the trigger's traceback in its log, and the task's
retries apply.

The blocking clients (psycopg2, librdkafka, the connection lookup) run in a worker thread
(``asyncio.to_thread``), so the triggerer's event loop is never blocked. The serialized
kwargs (stored in the metadata DB) hold connection ids, never DSNs or passwords.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Sequence
from typing import Any

from airflow.triggers.base import BaseTrigger, TriggerEvent

from airflow_provider_eo.clients.connections import DEFAULT_KAFKA_CONN_ID, DEFAULT_LEDGER_CONN_ID
from airflow_provider_eo.hooks.kafka import EoKafkaHook
from airflow_provider_eo.hooks.ledger import EoLedgerHook
from airflow_provider_eo.ledger.planning.new_records import PendingRecords
from airflow_provider_eo.ledger.protocol import read_positions
from airflow_provider_eo.observability.lag_sampling import WaitSampler

CLASSPATH = "airflow_provider_eo.triggers.records_available.RecordsAvailableTrigger"


class RecordsAvailableTrigger(BaseTrigger):
    """Fire when ``pipeline``'s next stream reservation has records (or partitions to pin,
    or a cursor outside the watermarks), or when ``deadline`` passes.

    :param pipeline: pipeline name (its ledger cursors).
    :param topics: the pipeline's topics (empty when it uses ``topic_pattern``).
    :param topic_pattern: the pipeline's topic regex, or None.
    :param deadline: when to give up, in seconds since the epoch (``time.time()``).
    :param poll_interval: seconds between checks.
    :param ledger_conn_id: Airflow connection id of the ledger.
    :param kafka_conn_id: Airflow connection id of Kafka.
    """

    def __init__(
        self,
        *,
        pipeline: str,
        topics: Sequence[str],
        topic_pattern: str | None,
        deadline: float,
        poll_interval: float,
        ledger_conn_id: str = DEFAULT_LEDGER_CONN_ID,
        kafka_conn_id: str = DEFAULT_KAFKA_CONN_ID,
    ) -> None:
        super().__init__()
        self.pipeline = pipeline
        self.topics = list(topics)
        self.topic_pattern = topic_pattern
        self.deadline = float(deadline)
        self.poll_interval = float(poll_interval)
        self.ledger_conn_id = ledger_conn_id
        self.kafka_conn_id = kafka_conn_id
        self._kafka: EoKafkaHook | None = None
        self._sampler = WaitSampler()

    def serialize(self) -> tuple[str, dict[str, Any]]:
        """The classpath and the keyword arguments (names and numbers only, no secrets)."""
        return CLASSPATH, {
            "pipeline": self.pipeline,
            "topics": self.topics,
            "topic_pattern": self.topic_pattern,
            "deadline": self.deadline,
            "poll_interval": self.poll_interval,
            "ledger_conn_id": self.ledger_conn_id,
            "kafka_conn_id": self.kafka_conn_id,
        }

    async def run(self) -> AsyncIterator[TriggerEvent]:
        """Check, sleep ``poll_interval`` (never past the deadline), repeat; one event."""
        started = time.time()
        while True:
            found = await asyncio.to_thread(self._check)
            if found.ready:
                self.log.info("pipeline=%s ready: %s", self.pipeline, found.reason())
                yield TriggerEvent({"status": "records", **found.to_json()})
                return
            remaining = self.deadline - time.time()
            if remaining <= 0:
                waited = round(time.time() - started, 3)
                self.log.info("pipeline=%s no records before the deadline", self.pipeline)
                yield TriggerEvent(
                    {
                        "status": "timeout",
                        "pipeline": self.pipeline,
                        "pending": 0,
                        "waited_seconds": waited,
                    }
                )
                return
            self.log.debug(
                "pipeline=%s nothing pending, next check in %.1fs",
                self.pipeline,
                min(self.poll_interval, remaining),
            )
            await asyncio.sleep(min(self.poll_interval, remaining))

    def _check(self) -> PendingRecords:
        """One application of the pending rule, and its lag sample when due (blocking: runs
        in a worker thread)."""
        if self._kafka is None:
            self._kafka = EoKafkaHook(self.kafka_conn_id)
        # a connection per check: a waiting trigger holds no idle ledger connection
        with EoLedgerHook(self.ledger_conn_id).get_ledger() as ledger:
            positions = read_positions(
                self.pipeline, self.topics, self.topic_pattern, ledger=ledger, kafka=self._kafka
            )
            found = positions.pending()
            self._sampler.record(ledger, positions, found.ready)
        return found
