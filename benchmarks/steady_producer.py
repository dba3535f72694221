"""A steady producer: records at a fixed rate into a topic, each one's partition, offset and
Kafka record timestamp kept (the freshness benchmark's produce times).

Record ``i`` is :func:`benchmarks.dataset.event_fields`'s ``i``-th event as JSON, keyed
``r<i>`` (one row per record, so the cells count proves each one landed), sent to partition
``i % partitions`` at its scheduled time ``start + i / rate`` with that time, in milliseconds,
as its record timestamp (CreateTime). The producer lingers at most 5 ms, so a record reaches
the broker within milliseconds of its timestamp.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from confluent_kafka import KafkaError, Message, Producer

from benchmarks.dataset import event_fields
from benchmarks.freshness_figures import ProducedRecord

PRODUCER_CONFIG = {"linger.ms": "5", "acks": "all", "compression.type": "lz4"}


def record(i: int) -> tuple[bytes, bytes]:
    """Key and JSON value of record ``i``: a unique key, the benchmark's event fields."""
    _, fields = event_fields(i)
    return f"r{i:09d}".encode(), json.dumps(fields, separators=(",", ":")).encode()


@dataclass
class SteadyProducer:
    """Produces to ``topic`` (``partitions`` partitions) from record number ``next_index`` on;
    ``produced`` holds every delivered record."""

    bootstrap: str
    topic: str
    partitions: int
    next_index: int = 0
    produced: list[ProducedRecord] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)

    def run(
        self, rate: float, seconds: float, until: Callable[[], bool] | None = None, most_s: float = 900.0
    ) -> list[ProducedRecord]:
        """Produce ``rate`` records a second for ``seconds`` or, with ``until``, on until it
        returns true (asked once a second after ``seconds``; TimeoutError after ``most_s``),
        then wait for every delivery; returns the records delivered in this call. Raises
        RuntimeError on a failed delivery."""
        producer = Producer({"bootstrap.servers": self.bootstrap, **PRODUCER_CONFIG})
        before = len(self.produced)

        def delivered(err: KafkaError | None, msg: Message) -> None:
            if err is not None:
                self.failures.append(str(err))
                return
            partition, offset, (_, stamp) = msg.partition(), msg.offset(), msg.timestamp()
            if partition is None or offset is None:
                self.failures.append(f"delivered without a partition or offset: {msg.key()!r}")
                return
            self.produced.append(ProducedRecord(partition, offset, stamp / 1000))

        start = time.time()
        count = int(rate * seconds)
        n = 0
        while n < count or (until is not None and not self._done(until, start, most_s)):
            if n == count:
                count += max(1, int(rate))  # one second more
            due = start + n / rate
            n += 1
            if (wait := due - time.time()) > 0:
                time.sleep(wait)
            key, value = record(self.next_index)
            producer.produce(
                self.topic,
                value,
                key,
                partition=self.next_index % self.partitions,
                timestamp=int(max(due, time.time()) * 1000),
                on_delivery=delivered,
            )
            self.next_index += 1
            producer.poll(0)
        if producer.flush(60) or self.failures:
            raise RuntimeError(
                f"produce to {self.topic}: {len(producer)} undelivered, failures {self.failures[:3]}"
            )
        return self.produced[before:]

    @staticmethod
    def _done(until: Callable[[], bool], start: float, most_s: float) -> bool:
        if until():
            return True
        if time.time() - start > most_s:
            raise TimeoutError(f"still producing the warm-up after {most_s:.0f} s")
        return False
