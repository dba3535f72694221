"""What the ledger needs from Kafka (implemented by ``EoKafkaHook``).

A topic-partition is ``tp = (topic, partition)``. Implementations answer from the
broker (the tests, too, run them against Apache Kafka).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

TopicPartition = tuple[str, int]


@dataclass(frozen=True)
class Pin:
    """The pinned starting offset of a newly seen partition and why it was chosen."""

    offset: int
    source: str  # "group", "earliest", "latest" or "timestamp"


@runtime_checkable
class OffsetSource(Protocol):
    """Read-only offset queries."""

    def list_partitions(self, topics: Sequence[str], pattern: str | None) -> list[TopicPartition]:
        """Partitions of ``topics``, or of every topic whose name fully matches ``pattern``."""
        ...

    def watermarks(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, tuple[int, int]]:
        """``(low, high)`` watermarks of each partition; high is the next offset to be written."""
        ...

    def offsets_for_timestamp(self, tps: Iterable[TopicPartition], ts_ms: int) -> dict[TopicPartition, int]:
        """Earliest offset whose timestamp is >= ``ts_ms``; the high watermark where no
        record is that late (every partition of ``tps`` is answered)."""
        ...

    def committed_offsets(
        self, group_id: str, tps: Iterable[TopicPartition]
    ) -> dict[TopicPartition, int | None]:
        """The group's committed offset per partition (None when it has none)."""
        ...


@runtime_checkable
class OffsetPublisher(Protocol):
    """Publishes committed progress to a consumer group."""

    def commit_offsets(self, group_id: str, offsets: Mapping[TopicPartition, int]) -> None:
        """Commit exactly ``offsets`` (next offset to read per partition) for ``group_id``."""
        ...


@runtime_checkable
class KafkaOffsets(OffsetSource, OffsetPublisher, Protocol):
    """Both: what the epoch protocol needs of the broker (``EoKafkaHook`` is one)."""


class KafkaOnFirstUse:
    """The broker's offsets made by ``factory`` at the first call and kept, so a caller
    that never needs the broker never connects. Calling it without a factory raises
    ``RuntimeError`` naming ``owner``."""

    def __init__(self, factory: Callable[[], KafkaOffsets] | None, owner: str) -> None:
        self._factory = factory
        self._owner = owner
        self._offsets: KafkaOffsets | None = None

    def __call__(self) -> KafkaOffsets:
        if self._offsets is None:
            if self._factory is None:
                raise RuntimeError(f"this {self._owner} was created without Kafka")
            self._offsets = self._factory()
        return self._offsets
