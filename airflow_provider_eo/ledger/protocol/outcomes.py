"""The typed outcomes of :class:`~airflow_provider_eo.ledger.protocol.epoch_protocol.EpochProtocol`'s
entry points (the fencing verdicts are in :mod:`~airflow_provider_eo.ledger.planning.fencing`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from airflow_provider_eo.ledger.model.epoch import Epoch
from airflow_provider_eo.ledger.model.offsets import TopicPartition
from airflow_provider_eo.ledger.planning.recovery_plan import SettlementPlan
from airflow_provider_eo.ledger.protocol.dead_letter_publication import DeadLetterPublication


@dataclass(frozen=True)
class Reserved:
    """An epoch is RESERVED for the run (a retry of the run gets the same one)."""

    epoch: Epoch


@dataclass(frozen=True)
class NothingToReserve:
    """No epoch was opened: ``reason`` says why (no new data, empty backfill range)."""

    pipeline: str
    reason: str


@dataclass(frozen=True)
class AlreadyCommitted:
    """This run already committed exactly these ranges (a cleared or retried run
    resuming): nothing is to be written again."""

    epoch: Epoch


@dataclass(frozen=True)
class AlreadyWritten:
    """This run's open epoch over exactly these ranges is already WRITTEN (a retry after
    the vote): it needs its commit, not another write."""

    epoch: Epoch


Reservation = Reserved | NothingToReserve | AlreadyWritten | AlreadyCommitted


@dataclass(frozen=True)
class Committed:
    """The epoch is COMMITTED; ``published`` is what this call sent to ``group_id``
    (empty for backfills and when ``already_committed``). ``high_watermarks``: each stream
    range's partition right after this commit (its lag sample's; empty for backfills, a
    no-op or an unreachable broker). ``dead_letters``: the publication that followed
    (:meth:`EpochProtocol.commit`; None inside a recovery or release, which publish once,
    in :class:`Settled`)."""

    epoch: Epoch
    published: dict[TopicPartition, int]
    group_id: str | None
    already_committed: bool
    high_watermarks: Mapping[TopicPartition, int] = field(default_factory=dict)
    dead_letters: DeadLetterPublication | None = None

    def published_json(self) -> list[dict[str, Any]]:
        """``published`` as ``[{topic, partition, offset}]``, by topic and partition."""
        return [{"topic": t, "partition": p, "offset": o} for (t, p), o in sorted(self.published.items())]


@dataclass(frozen=True)
class Settled:
    """What :meth:`EpochProtocol.recover` / :meth:`EpochProtocol.release` did: ``plan``
    carried out, ``committed`` the commits among its steps (in order), then the pipeline's
    dead-letter publication."""

    pipeline: str
    plan: SettlementPlan
    committed: tuple[Committed, ...]
    dead_letters: DeadLetterPublication
