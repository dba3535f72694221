"""Pure planning of a stream reservation: pins, cursors + watermarks + caps -> ranges.

No I/O here: :mod:`airflow_provider_eo.ledger.protocol.stream_reservation` reads the
inputs in the reservation transaction (the ledger's open epochs and cursors; Kafka's
partitions, watermarks, the group's committed offsets and a timestamp's offsets) and
stores the result. Planners take the parts of the pipeline's spec they use
(``StartingSpec``, ``CapsSpec``), never the whole ``PipelineSpec``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from airflow_provider_eo.config.specs import CapsSpec, StartingPolicy, StartingSpec
from airflow_provider_eo.ledger.model.epoch import Epoch, PartitionRange
from airflow_provider_eo.ledger.model.offsets import Pin, TopicPartition
from airflow_provider_eo.ledger.model.refusals import (
    CursorBeyondHighWatermark,
    DataLossError,
    OpenEpochConflict,
)
from airflow_provider_eo.ledger.model.runs import RunIdentity


@dataclass(frozen=True)
class StreamPlan:
    """Ranges for every listed partition (empty ones included) and the gaps to record."""

    ranges: tuple[PartitionRange, ...]
    gaps: tuple[PartitionRange, ...]

    @property
    def has_data(self) -> bool:
        """Whether any range is non-empty (else no epoch is opened)."""
        return any(r.record_count > 0 for r in self.ranges)


def resume_or_conflict(pipeline: str, open_epochs: Sequence[Epoch], run: RunIdentity) -> Epoch | None:
    """The run's own open stream epoch (the retry of a reservation that already happened:
    that epoch again), or None when no stream epoch is open; raises ``OpenEpochConflict``
    naming the holder when another run holds one (at most one open stream epoch)."""
    for existing in open_epochs:
        if run.owns(existing):
            return existing
        raise OpenEpochConflict(
            pipeline, existing.epoch_id, existing.state.value, existing.dag_id, existing.run_id
        )
    return None


def starting_policy(starting: StartingSpec, *, first_reservation: bool) -> StartingPolicy:
    """Where a partition the pipeline has never seen starts: ``starting.policy`` at the
    pipeline's first reservation, ``starting.new_partitions`` afterwards."""
    return starting.policy if first_reservation else starting.new_partitions


def timestamp_to_look_up(starting: StartingSpec, *, first_reservation: bool) -> int | None:
    """The Kafka timestamp (epoch ms) whose offsets :func:`choose_pins` needs as its
    ``timestamp_offsets`` (None: the policy is not ``timestamp``, nothing to look up)."""
    if starting_policy(starting, first_reservation=first_reservation) != "timestamp":
        return None
    return starting.timestamp_ms


def choose_pins(
    new_tps: Iterable[TopicPartition],
    watermarks: Mapping[TopicPartition, tuple[int, int]],
    *,
    first_reservation: bool,
    starting: StartingSpec,
    group_offsets: Mapping[TopicPartition, int | None],
    timestamp_offsets: Mapping[TopicPartition, int],
) -> dict[TopicPartition, Pin]:
    """Starting offsets of partitions the pipeline has never seen.

    First reservation of a pipeline: if the consumer group has committed offsets for any
    of the partitions, those are used (migration from an existing consumer) and the
    starting policy fills the partitions the group lacks; without group offsets the
    starting policy applies. Later reservations use ``starting.new_partitions``.
    ``timestamp_offsets`` answers the timestamp policy (negative/missing = the high
    watermark). Group offsets are clamped to the low watermark only by the caller's data
    loss check, never silently here.
    """
    use_group = first_reservation and any(v is not None and v >= 0 for v in group_offsets.values())
    pins: dict[TopicPartition, Pin] = {}
    for tp in sorted(new_tps):
        low, high = watermarks[tp]
        committed = group_offsets.get(tp)
        if use_group and committed is not None and committed >= 0:
            pins[tp] = Pin(committed, "group")
            continue
        policy = starting_policy(starting, first_reservation=first_reservation)
        if policy == "earliest":
            pins[tp] = Pin(low, "earliest")
        elif policy == "latest":
            pins[tp] = Pin(high, "latest")
        else:
            found = timestamp_offsets.get(tp, -1)
            pins[tp] = Pin(high if found < 0 else max(found, low), "timestamp")
    return pins


def plan_stream(
    cursors: Mapping[TopicPartition, int],
    watermarks: Mapping[TopicPartition, tuple[int, int]],
    caps: CapsSpec,
    *,
    record_gaps: bool,
) -> StreamPlan:
    """Ranges from each partition's cursor toward its high watermark, capped.

    Raises ``DataLossError`` when a cursor is below the low watermark (unless
    ``record_gaps``: then the range starts at the low watermark and a gap
    ``[cursor, low)`` is planned) and ``CursorBeyondHighWatermark`` when a cursor lies
    past the high watermark. Partitions are checked in (topic, partition) order.
    """
    starts: dict[TopicPartition, int] = {}
    available: dict[TopicPartition, int] = {}
    gaps: list[PartitionRange] = []
    for tp in sorted(cursors):
        cursor = cursors[tp]
        low, high = watermarks[tp]
        if cursor > high:
            raise CursorBeyondHighWatermark(tp[0], tp[1], cursor, high)
        if cursor < low:
            if not record_gaps:
                raise DataLossError(tp[0], tp[1], cursor, low)
            gaps.append(PartitionRange(tp[0], tp[1], cursor, low))
            cursor = low
        starts[tp] = cursor
        available[tp] = high - cursor
    sizes = split_cap(available, caps)
    ranges = tuple(PartitionRange(tp[0], tp[1], starts[tp], starts[tp] + sizes[tp]) for tp in sorted(starts))
    return StreamPlan(ranges=ranges, gaps=tuple(gaps))


def split_cap(available: Mapping[TopicPartition, int], caps: CapsSpec) -> dict[TopicPartition, int]:
    """How many records each partition may take this epoch.

    First ``max_records_per_partition`` caps each partition. If the sum still exceeds
    ``max_records_total``, the total is split across partitions with data, like Spark's
    ``maxOffsetsPerTrigger`` but exact and deterministic: when the total is at least
    the number of such partitions each gets one record, and the rest of the budget is
    shared in proportion to what each has left (largest-remainder rounding, ties by
    (topic, partition)); when the total is smaller, the partitions with the most data
    (ties by (topic, partition)) get one record each. The result sums to the total.
    """
    per = caps.max_records_per_partition
    sizes = {tp: min(n, per) if per is not None else n for tp, n in available.items()}
    total = caps.max_records_total
    with_data = sorted(tp for tp, n in sizes.items() if n > 0)
    if total is None or sum(sizes.values()) <= total:
        return sizes
    result = dict.fromkeys(sizes, 0)
    if total < len(with_data):
        for tp in sorted(with_data, key=lambda tp: (-sizes[tp], tp))[:total]:
            result[tp] = 1
        return result
    budget = total - len(with_data)
    rest = {tp: sizes[tp] - 1 for tp in with_data}
    rest_sum = sum(rest.values())
    remainders: list[tuple[int, TopicPartition]] = []
    for tp in with_data:
        share, remainder = divmod(budget * rest[tp], rest_sum)
        result[tp] = 1 + share
        remainders.append((-remainder, tp))
    leftover = total - sum(result.values())
    for _, tp in sorted(remainders)[:leftover]:
        result[tp] += 1
    return result
