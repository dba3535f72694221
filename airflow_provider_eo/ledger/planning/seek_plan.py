"""Planning a seek or a reset of a pipeline's stream cursors (``eo-ledger seek`` / ``reset``).

Pure: targets, watermarks and cursors in; cursor moves, gaps and refusals out. Every
refusal is a :class:`~airflow_provider_eo.ledger.model.refusals.SeekRefused` naming what is wrong
and what to do; the transaction (``ledger/protocol/cursor_seek.py``) runs only a plan that passed them.

* a **forward** move skips ``[from, to)``: it becomes a gap with the move's kind as reason;
* a **backward** move re-reads ``[to, from)`` with the next stream epoch (cells cannot go
  back: the write is idempotent and versioned by offset);
* a partition whose target equals its cursor does not move (and records nothing).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from airflow_provider_eo.ledger.model.epoch import Epoch, PartitionRange
from airflow_provider_eo.ledger.model.offsets import TopicPartition
from airflow_provider_eo.ledger.model.refusals import SeekRefused

MoveKind = Literal["seek", "reset"]
TargetKind = Literal["earliest", "latest", "offset", "timestamp"]
Watermarks = Mapping[TopicPartition, tuple[int, int]]

_TARGET_SYNTAX = "--to takes earliest, latest, offset:N (N >= 0) or timestamp:T (ISO-8601 or epoch ms)"


@dataclass(frozen=True)
class SeekTarget:
    """Where ``--to`` asks the cursors to go: ``value`` is N for ``offset``, the time in
    epoch milliseconds for ``timestamp``, None otherwise."""

    kind: TargetKind
    value: int | None = None

    def __str__(self) -> str:
        return self.kind if self.value is None else f"{self.kind}:{self.value}"


def parse_target(text: str) -> SeekTarget:
    """``earliest`` | ``latest`` | ``offset:N`` | ``timestamp:T``; ``SeekRefused`` otherwise.

    ``T`` is epoch milliseconds (digits) or ISO-8601 (a time without an offset is UTC).
    """
    head, _, rest = text.strip().partition(":")
    if head in ("earliest", "latest") and not rest:
        return SeekTarget(head)  # type: ignore[arg-type]
    if head == "offset" and re.fullmatch(r"\d+", rest):
        return SeekTarget("offset", int(rest))
    if head == "timestamp" and rest:
        return SeekTarget("timestamp", parse_timestamp(rest))
    raise SeekRefused(f"bad target {text!r}: {_TARGET_SYNTAX}")


def parse_timestamp(text: str) -> int:
    """Epoch milliseconds of ``text`` (digits: already milliseconds; else ISO-8601, UTC
    when it names no offset); ``SeekRefused`` when it is neither."""
    if re.fullmatch(r"\d+", text):
        return int(text)
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError as exc:
        raise SeekRefused(f"bad timestamp {text!r}: {_TARGET_SYNTAX}") from exc
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)


def parse_partition(text: str) -> TopicPartition:
    """``TOPIC:P`` -> ``(topic, p)`` (topic names hold no ``:``); ``SeekRefused`` otherwise."""
    topic, _, partition = text.rpartition(":")
    if not topic or not re.fullmatch(r"\d+", partition):
        raise SeekRefused(f"bad --partition {text!r}: expected TOPIC:PARTITION, e.g. orders:0")
    return (topic, int(partition))


def select_partitions(
    pipeline: str, pinned: Iterable[TopicPartition], requested: Sequence[TopicPartition]
) -> list[TopicPartition]:
    """The partitions to move, sorted: ``requested`` (each must be pinned), or every pinned
    one when none is requested. ``SeekRefused`` when nothing is pinned or a request is not."""
    pinned = sorted(set(pinned))
    if not pinned:
        raise SeekRefused(
            f"pipeline {pipeline!r} has no pinned partition yet: its first stream epoch pins them"
        )
    unknown = sorted(set(requested) - set(pinned))
    if unknown:
        named = ", ".join(f"{t}:{p}" for t, p in unknown)
        known = ", ".join(f"{t}:{p}" for t, p in pinned)
        raise SeekRefused(f"pipeline {pipeline!r} has no pinned partition {named} (pinned: {known})")
    return sorted(set(requested)) if requested else pinned


def refuse_open_epochs(pipeline: str, open_epochs: Sequence[Epoch]) -> None:
    """``SeekRefused`` naming every open (RESERVED / WRITTEN) epoch of ``pipeline``."""
    if open_epochs:
        named = ", ".join(f"{e.epoch_id} ({e.kind.value}, {e.state.value})" for e in open_epochs)
        raise SeekRefused(
            f"pipeline {pipeline!r} has open epochs {named}: let them finish, or settle them with "
            "`eo-ledger commit ID --yes` / `eo-ledger abort ID --yes`, then run this again"
        )


def target_offsets(
    target: SeekTarget,
    tps: Sequence[TopicPartition],
    watermarks: Watermarks,
    by_timestamp: Mapping[TopicPartition, int] | None = None,
) -> dict[TopicPartition, int]:
    """The offset ``target`` means per partition of ``tps``.

    ``earliest``/``latest``: the low/high watermark; ``offset:N``: N, refused outside
    ``[low, high]``; ``timestamp``: ``by_timestamp`` (Kafka's offsets_for_times, the high
    watermark where no record is that late), refused for a partition holding records
    that are all older than T (an empty partition goes to its end).
    """
    targets: dict[TopicPartition, int] = {}
    for tp in tps:
        low, high = watermarks[tp]
        if target.kind == "earliest":
            targets[tp] = low
        elif target.kind == "latest":
            targets[tp] = high
        elif target.kind == "offset":
            assert target.value is not None
            targets[tp] = check_within_watermarks(tp, target.value, watermarks, f"offset {target.value}")
        else:
            if by_timestamp is None:
                raise ValueError("a timestamp target needs the offsets for that timestamp")
            found = by_timestamp[tp]
            if found >= high and high > low:
                raise SeekRefused(
                    f"timestamp {target.value} is after every record of {tp[0]}[{tp[1]}] "
                    f"(offsets {low}..{high - 1}): nothing to seek to; use --to latest to skip them all"
                )
            targets[tp] = max(found, low)
    return targets


def check_within_watermarks(tp: TopicPartition, offset: int, watermarks: Watermarks, what: str) -> int:
    """``offset`` when ``low <= offset <= high``; else ``SeekRefused`` naming the partition
    and both watermarks."""
    low, high = watermarks[tp]
    if not low <= offset <= high:
        side = "below the low" if offset < low else "above the high"
        raise SeekRefused(
            f"{what} is {side} watermark of {tp[0]}[{tp[1]}]: low watermark {low}, high watermark {high}"
        )
    return offset


def group_targets(
    committed: Mapping[TopicPartition, int | None], watermarks: Watermarks
) -> tuple[dict[TopicPartition, int], list[TopicPartition]]:
    """A reset's targets: each partition's committed group offset (checked against the
    watermarks), and the partitions the group has no offset for (left alone)."""
    targets: dict[TopicPartition, int] = {}
    unset: list[TopicPartition] = []
    for tp, offset in sorted(committed.items()):
        if offset is None:
            unset.append(tp)
        else:
            targets[tp] = check_within_watermarks(tp, offset, watermarks, f"the group's offset {offset}")
    return targets, unset


@dataclass(frozen=True)
class CursorMove:
    """One partition's cursor from ``from_offset`` to ``to_offset``."""

    topic: str
    partition: int
    from_offset: int
    to_offset: int

    @property
    def tp(self) -> TopicPartition:
        return (self.topic, self.partition)

    @property
    def moved(self) -> bool:
        return self.from_offset != self.to_offset

    def to_json(self) -> dict[str, Any]:
        """``{topic, partition, from, to, direction}`` (direction: forward/backward/none)."""
        direction = (
            "none"
            if not self.moved
            else "forward" if self.to_offset > self.from_offset else "backward"
        )  # fmt: skip
        return {"topic": self.topic, "partition": self.partition, "from": self.from_offset,
                "to": self.to_offset, "direction": direction}  # fmt: skip


@dataclass(frozen=True)
class SeekPlan:
    """What a seek or reset does: a move per selected partition (unmoved ones too), the
    gaps its forward moves skip, and (a reset) the partitions left alone."""

    pipeline: str
    kind: MoveKind
    moves: tuple[CursorMove, ...]
    gaps: tuple[PartitionRange, ...]
    left_alone: tuple[TopicPartition, ...] = ()

    @property
    def changes(self) -> tuple[CursorMove, ...]:
        """The moves that change a cursor."""
        return tuple(m for m in self.moves if m.moved)


def plan_moves(
    pipeline: str,
    kind: MoveKind,
    cursors: Mapping[TopicPartition, int],
    targets: Mapping[TopicPartition, int],
    left_alone: Sequence[TopicPartition] = (),
) -> SeekPlan:
    """The plan moving each cursor of ``targets``' partitions to its target; every
    forward move's skipped range ``[cursor, target)`` is a gap."""
    moves = tuple(CursorMove(tp[0], tp[1], cursors[tp], targets[tp]) for tp in sorted(targets))
    gaps = tuple(
        PartitionRange(m.topic, m.partition, m.from_offset, m.to_offset)
        for m in moves
        if m.to_offset > m.from_offset
    )
    return SeekPlan(pipeline, kind, moves, gaps, tuple(sorted(left_alone)))
