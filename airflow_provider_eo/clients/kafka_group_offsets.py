"""A consumer group's offsets: read them, and commit exact ones, outside any group generation.

Reads go through a consumer of the group (``committed``), retried while the group's
coordinator moves or loads; commits go through the admin API
(``AlterConsumerGroupOffsets``), each with a client of its own.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import TimeoutError as FutureTimeout
from contextlib import AbstractContextManager
from typing import Any

from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient

from airflow_provider_eo.clients.kafka_errors import ClientErrorLog, EoKafkaError
from airflow_provider_eo.clients.kafka_watermarks import TP
from airflow_provider_eo.ledger.model.epoch import offsets_text

log = logging.getLogger(__name__)

_COORDINATOR_NOT_READY = frozenset(
    {
        KafkaError.NOT_COORDINATOR,
        KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
        KafkaError.COORDINATOR_NOT_AVAILABLE,
    }
)


def _coordinator_not_ready(error: object) -> bool:
    """True for the transient answers of a group coordinator that is moving or loading."""
    return isinstance(error, KafkaError) and error.code() in _COORDINATOR_NOT_READY


class GroupOffsets:
    """One group's offsets through clients from ``consumer`` (a group's consumer, as a
    context manager) and ``new_admin``; every call is bounded by ``timeout_s``, and
    ``errors`` (the clients' ``error_cb``) explains failures."""

    def __init__(
        self,
        group_id: str,
        consumer: Callable[[str], AbstractContextManager[Consumer]],
        new_admin: Callable[[], AdminClient],
        timeout_s: float,
        errors: ClientErrorLog,
    ) -> None:
        self.group_id = group_id
        self.consumer = consumer
        self.new_admin = new_admin
        self.timeout_s = timeout_s
        self.errors = errors

    def committed(self, tps: Iterable[TP]) -> dict[TP, int | None]:
        """The group's committed offset per partition; ``None`` where it has none.

        While the group's coordinator is moving or loading (a broker just restarted, a new
        cluster creating its offsets topic) the lookup is retried until the timeout.
        Raises :class:`EoKafkaError` naming the group (and partition) otherwise.
        """
        tps = list(tps)
        if not tps:
            return {}
        group_id = self.group_id
        deadline = time.monotonic() + self.timeout_s
        with self.consumer(group_id) as consumer:
            while True:
                try:
                    answer = consumer.committed(
                        [TopicPartition(t, p) for t, p in tps],
                        timeout=max(0.5, deadline - time.monotonic()),
                    )
                    break
                except KafkaException as exc:
                    if _coordinator_not_ready(exc.args[0]) and time.monotonic() < deadline:
                        time.sleep(0.2)
                        continue
                    why = f"{exc}{self.errors.explain(consumer)}"
                    raise EoKafkaError(
                        f"committed offsets of group {group_id!r} for {list(tps)}: {why}"
                    ) from exc
        result: dict[TP, int | None] = {}
        for tp in answer:
            if tp.error is not None:
                where = f"{tp.topic}[{tp.partition}]"
                raise EoKafkaError(f"committed offset of group {group_id!r} {where}: {tp.error}")
            result[(tp.topic, tp.partition)] = int(tp.offset) if tp.offset >= 0 else None
        return result

    def commit(self, offsets: Mapping[TP, int]) -> None:
        """Commit exactly ``offsets`` (an OffsetCommit outside any group generation, like a
        consumer with auto-commit off committing explicit offsets), waiting at most the
        timeout. The broker's answer carries an error code per partition, so a success is
        the broker's word that every offset is stored. Raises :class:`EoKafkaError` naming
        group and partition on a timeout or any per-partition error (e.g. the group has
        live members). Empty ``offsets``: nothing is sent.

        Uses the admin API: a consumer's ``close()`` after a commit blocks until an
        unreachable broker answers, the admin request does not.
        """
        if not offsets:
            return
        group_id = self.group_id
        request = [TopicPartition(t, p, int(o)) for (t, p), o in sorted(offsets.items())]
        where = f"commit to group {group_id!r} of {offsets_text(offsets)}"
        timeout = self.timeout_s
        admin = self.new_admin()  # referenced until answered: a destroyed client abandons requests
        answer: list[TopicPartition] = []
        error = ""
        futures: Any = None
        try:
            futures = admin.alter_consumer_group_offsets(
                [ConsumerGroupTopicPartitions(group_id, request)], request_timeout=timeout
            )
            answer = futures[group_id].result(timeout=timeout + 1).topic_partitions or []
        except (KafkaException, FutureTimeout) as exc:
            error = (str(exc) or f"no answer within {timeout:g}s") + self.errors.explain(admin)
        # Destroy the client now, not when a traceback cycle is collected: librdkafka 2.16
        # aborts the process if a timed-out request's late answer reaches a live handle.
        futures = None
        del admin
        if error:
            raise EoKafkaError(f"{where}: {error}")
        answered = {(tp.topic, tp.partition) for tp in answer}
        for tp in answer:
            if tp.error is not None:
                raise EoKafkaError(f"commit to group {group_id!r} {tp.topic}[{tp.partition}]: {tp.error}")
        unanswered = {tp: o for tp, o in offsets.items() if tp not in answered}
        if unanswered:
            raise EoKafkaError(f"commit to group {group_id!r}: no answer for {offsets_text(unanswered)}")
        log.info("committed offsets group=%s offsets=%s", group_id, offsets_text(offsets))
