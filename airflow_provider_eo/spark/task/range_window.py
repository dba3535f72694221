"""The window of a packed task's reader: upcoming ranges fetched at once, each buffered apart.

Read one at a time, every small range of a pack costs a Kafka fetch round trip (about
3.4 ms: 400 ranges of 50 records spent 1.4 s there). ``RangeConsumer`` therefore assigns
the partitions of the next :func:`window_size` ranges together, each at its range's start,
and keeps what arrives for a range that is not yet being read in that range's
:class:`RangeSlot`. Contract:

* a slot holds exactly the records of its range fetched so far, in offset order, and
  whether its range is complete (its last offset reached, a record at or past its end, or
  a partition EOF at or past its end) or failed (the error its read raises once it is read);
* a slot is bounded in bytes (key plus value): once it holds ``bound`` bytes, or its range
  is complete or failed, the reader pauses its partition; what was already fetched for it
  still enters it (librdkafka's position has moved past it: it is never dropped), so a slot
  exceeds ``bound`` by at most what librdkafka had pre-fetched;
* sizing follows the reader's pre-fetch bound ``queue_bytes`` (``READ_AHEAD_SEGMENTS``
  segments of ``batch_bytes``, at least 1 MiB; 8 MiB by default): the slots share one more
  ``queue_bytes``: ``width = clamp(queue_bytes // MIN_SLOT_BYTES, 1, MAX_WIDTH)`` ranges, each
  slot bounded to ``queue_bytes // width`` (default: 32 ranges of 256 KiB; at 1 MiB, 16 of
  64 KiB). A reader's memory is then at most its librdkafka queue plus the slots: about
  twice ``queue_bytes`` plus one pre-fetch per paused partition.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from airflow_provider_eo.spark.records import KafkaRecord, TaskRange
from airflow_provider_eo.spark.task.range_errors import RangeReadError

#: The most ranges a reader fetches at once.
MAX_WIDTH = 32
#: The smallest buffer worth a slot of its own.
MIN_SLOT_BYTES = 65_536
#: The budget of a reader given no ``queue_bytes`` (the write task's smallest read-ahead).
DEFAULT_BUDGET = 1 << 20


def window_size(queue_bytes: int | None) -> tuple[int, int]:
    """``(width, bound)``: how many ranges a reader with pre-fetch bound ``queue_bytes``
    fetches at once, and the bytes each slot holds before its partition is paused."""
    budget = queue_bytes or DEFAULT_BUDGET
    width = min(MAX_WIDTH, max(1, budget // MIN_SLOT_BYTES))
    return width, max(1, budget // width)


@dataclass(eq=False)
class RangeSlot:
    """One range of the window: its records fetched so far and its state (module contract).
    ``assigned`` and ``paused`` say what the reader's current consumer does with its partition."""

    rng: TaskRange
    bound: int
    next_offset: int = -1  # every offset below it is handled (-1: the range's start)
    records: deque[KafkaRecord] = field(default_factory=deque)
    bytes: int = 0
    done: bool = False
    failure: RangeReadError | None = None
    assigned: bool = False
    paused: bool = False

    def __post_init__(self) -> None:
        if self.next_offset < 0:
            self.next_offset = self.rng.start

    @property
    def key(self) -> tuple[str, int]:
        """The range's topic and partition."""
        return self.rng.topic, self.rng.partition

    @property
    def finished(self) -> bool:
        """Nothing more to fetch: the range is complete or failed."""
        return self.done or self.failure is not None

    @property
    def stops_fetching(self) -> bool:
        """Its partition should be paused: finished, or the buffer at its bound."""
        return self.finished or self.bytes >= self.bound

    def add(self, record: KafkaRecord) -> None:
        """Buffer the range's next record (offset at least ``next_offset``, below the end)."""
        self.records.append(record)
        self.bytes += record.size_bytes
        self.next_offset = record.offset + 1
        if self.next_offset >= self.rng.end:
            self.done = True

    def take(self) -> KafkaRecord:
        """The oldest buffered record (the buffer must not be empty)."""
        record = self.records.popleft()
        self.bytes -= record.size_bytes
        return record
