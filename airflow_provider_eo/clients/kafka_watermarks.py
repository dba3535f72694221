"""Partition watermarks through Kafka's ListOffsets admin request.

Earliest and latest offsets are asked read_committed, in requests of at most
:data:`CHUNK` partitions, all sent before any answer is awaited. Partitions a batch could
not answer are asked again one at a time, so an error names its own partition.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

from confluent_kafka import IsolationLevel, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

from airflow_provider_eo.clients.kafka_errors import ClientErrorLog, EoKafkaError

TP = tuple[str, int]

#: Partitions per ListOffsets request. librdkafka's client-side cost of one request grows
#: faster than its partition count (about 1 s of CPU for 10,000 partitions, 0.1 s for ten
#: requests of 1,000), so big sets go in chunks.
CHUNK = 1000

LOW_AND_HIGH = (OffsetSpec.earliest(), OffsetSpec.latest())

#: How long the one-partition fallback keeps asking (a topic created a moment ago may
#: have no leader yet).
LEADERLESS_GRACE_S = 5.0


class WatermarkReader:
    """Reads (low, high) watermarks with admin clients from ``new_admin``; every call is
    bounded by ``timeout_s``, and ``errors`` (the clients' ``error_cb``) explains failures."""

    def __init__(
        self, new_admin: Callable[[], AdminClient], timeout_s: float, errors: ClientErrorLog
    ) -> None:
        self.new_admin = new_admin
        self.timeout_s = timeout_s
        self.errors = errors

    def read(self, tps: Iterable[TP]) -> dict[TP, tuple[int, int]]:
        """(low, high) of every partition of ``tps``, ``high`` being its last stable offset.

        Raises :class:`EoKafkaError` ``watermarks of <topic>[<partition>]: ...`` for a
        partition that cannot be answered, or ``watermarks of N partition(s): no answer
        within Ts`` when a batch times out.
        """
        wanted = sorted(set(tps))
        if not wanted:
            return {}
        admin = self.new_admin()  # referenced until answered: a destroyed client abandons requests
        chunks = [wanted[start : start + CHUNK] for start in range(0, len(wanted), CHUNK)]
        requests = [self._list_offsets(admin, chunk, spec) for chunk in chunks for spec in LOW_AND_HIGH]
        lows: dict[TP, int] = {}
        highs: dict[TP, int] = {}
        try:
            for index, futures in enumerate(requests):
                (highs if index % 2 else lows).update(self._answers(futures, len(wanted)))
        finally:
            # The futures go before the client: librdkafka 2.16 aborts the process if a
            # timed-out request's late answer reaches a live handle.
            requests.clear()
            del admin
        answered = {tp: (lows[tp], highs[tp]) for tp in wanted if tp in lows and tp in highs}
        if len(answered) < len(wanted):
            answered.update(self._one_by_one([tp for tp in wanted if tp not in answered]))
        return answered

    def _list_offsets(self, admin: AdminClient, tps: list[TP], spec: OffsetSpec) -> dict[Any, Any]:
        """Send one ListOffsets request (read_committed) for ``tps``; its futures by partition."""
        return admin.list_offsets(
            {TopicPartition(t, p): spec for t, p in tps},
            isolation_level=IsolationLevel.READ_COMMITTED,
            request_timeout=self.timeout_s,
        )

    def _answers(self, futures: Mapping[Any, Any], count: int) -> dict[TP, int]:
        """The offsets one request answered (failed partitions left out);
        :class:`EoKafkaError` when no answer comes within the timeout."""
        answers: dict[TP, int] = {}
        for tp, future in futures.items():
            try:
                answers[(tp.topic, tp.partition)] = int(future.result(timeout=self.timeout_s + 1).offset)
            except KafkaException:
                continue
            except FutureTimeout as exc:
                raise EoKafkaError(
                    f"watermarks of {count} partition(s): no answer within {self.timeout_s:g}s"
                ) from exc
        return answers

    def _one_by_one(self, tps: list[TP]) -> dict[TP, tuple[int, int]]:
        """One request per partition and spec: the fallback that names a failing partition."""
        admin = self.new_admin()
        result: dict[TP, tuple[int, int]] = {}
        for topic, partition in tps:
            low, high = (self._one_offset(admin, topic, partition, spec) for spec in LOW_AND_HIGH)
            result[(topic, partition)] = (low, high)
        return result

    def _one_offset(self, admin: AdminClient, topic: str, partition: int, spec: OffsetSpec) -> int:
        """One partition's offset, asked again on errors for :data:`LEADERLESS_GRACE_S`, then
        raised as :class:`EoKafkaError` naming the partition."""
        deadline = time.monotonic() + min(LEADERLESS_GRACE_S, self.timeout_s)
        while True:
            futures = self._list_offsets(admin, [(topic, partition)], spec)
            try:
                answer = futures[TopicPartition(topic, partition)].result(timeout=self.timeout_s + 1)
                return int(answer.offset)
            except (KafkaException, FutureTimeout) as exc:
                if time.monotonic() < deadline:
                    time.sleep(0.2)
                    continue
                why = f"{exc or 'no answer'}{self.errors.explain(admin)}"
                raise EoKafkaError(f"watermarks of {topic}[{partition}]: {why}") from exc
