"""The typed outcomes of :class:`~airflow_provider_eo.ledger.protocol.epoch_protocol.EpochProtocol`'s
entry points (the fencing verdicts are in :mod:`~airflow_provider_eo.ledger.planning.fencing`)."""

from __future__ import annotations

from dataclasses import dataclass

from airflow_provider_eo.ledger.model.epochs import Epoch
from airflow_provider_eo.ledger.model.offsets import TopicPartition
from airflow_provider_eo.ledger.planning.recovery_plan import SettlementPlan


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
    (empty for backfills and when ``already_committed``)."""

    epoch: Epoch
    published: dict[TopicPartition, int]
    group_id: str | None
    already_committed: bool


@dataclass(frozen=True)
class Settled:
    """What :meth:`EpochProtocol.recover` / :meth:`EpochProtocol.release` did."""

    pipeline: str
    plan: SettlementPlan
