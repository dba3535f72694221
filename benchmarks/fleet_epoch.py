"""One epoch of the fleet driver (:mod:`benchmarks.pipeline_fleet`) as the operators run
it: ``EpochProtocol.reserve_stream`` with a fresh ``EoKafkaHook``, the writer's vote
(``Ledger.vote_written``; the Spark write itself left out, unless a ``write`` is given:
then it writes and votes, as the write task does), then ``EpochProtocol.commit`` with
another fresh hook; each step timed, and the broker's calls timed by name.

A transaction the server rolls back as a serialization failure (SQLSTATE 40001) or a
deadlock victim (40P01) reaches here as ``TransactionRollbackError``: the step is retried
(the task's retry) and counted by SQLSTATE.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from psycopg2.extensions import TransactionRollbackError

from airflow_provider_eo.config import PipelineSpec
from airflow_provider_eo.ledger import Epoch, EpochProtocol, Ledger
from airflow_provider_eo.ledger.model.runs import RunIdentity
from airflow_provider_eo.ledger.protocol.outcomes import Reserved
from benchmarks.reserve_commit import TimedHook

DAG_ID = "fleet"
RETRIES = 5  # attempts of a step whose transaction is rolled back (40001/40P01) before giving up


@dataclass(frozen=True)
class EpochSample:
    """One epoch: its id, round, and the wall ms of its reserve and commit, with the
    broker's share of each (the hooks' outermost calls)."""

    pipeline: str
    epoch_id: int
    round: int
    reserve_ms: float
    reserve_broker_ms: float
    commit_ms: float
    commit_broker_ms: float
    calls: dict[str, float] = field(default_factory=dict)  # broker call -> ms ("reserve.watermarks")
    write_ms: float = 0.0  # the write step's (0 when the vote was cast without one)
    ended_at: float = 0.0  # time.monotonic() when the commit returned

    @property
    def total_ms(self) -> float:
        """Reserve + commit (the vote between them not counted)."""
        return self.reserve_ms + self.commit_ms


class CallTimedHook(TimedHook):
    """:class:`TimedHook` that also keeps each broker call's ms by name (where a tail is)."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: dict[str, float] = {}

    def _call(self, name: str, call: Any, *args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return call(*args, **kwargs)
        finally:
            self.calls[name] = self.calls.get(name, 0.0) + (time.perf_counter() - started) * 1000

    def list_partitions(self, *args: Any, **kwargs: Any) -> Any:
        return self._call("list_partitions", super().list_partitions, *args, **kwargs)

    def watermarks(self, *args: Any, **kwargs: Any) -> Any:
        return self._call("watermarks", super().watermarks, *args, **kwargs)

    def committed_offsets(self, *args: Any, **kwargs: Any) -> Any:
        return self._call("committed_offsets", super().committed_offsets, *args, **kwargs)

    def commit_offsets(self, *args: Any, **kwargs: Any) -> Any:
        return self._call("commit_offsets", super().commit_offsets, *args, **kwargs)


EpochWrite = Callable[[Epoch], None]
"""The write step of a reserved epoch: writes its ranges and votes WRITTEN under its
fencing token, or raises."""


def run_epoch(
    ledger: Ledger,
    spec: PipelineSpec,
    round_no: int,
    rollbacks: Counter[str],
    write: EpochWrite | None = None,
) -> EpochSample:
    """Reserve, vote and commit one epoch of ``spec`` as the operators do (a fresh
    protocol and hook for the reserve and for the commit); ``write`` (None: the vote alone,
    no records written) is the write task between them."""
    run = RunIdentity(DAG_ID, f"{spec.name}-{round_no}")
    reserving = CallTimedHook()
    _ = reserving.settings  # the Airflow connection lookup is task start-up, not measured
    started = time.perf_counter()
    with reserving.one_admin_client():  # as the operators' open_protocol does
        outcome = retried(
            rollbacks, lambda: EpochProtocol(ledger, kafka=lambda: reserving).reserve_stream(spec, run)
        )
    reserve_ms = (time.perf_counter() - started) * 1000
    if not isinstance(outcome, Reserved):
        raise RuntimeError(f"{spec.name} round {round_no}: nothing reserved ({outcome})")
    epoch = outcome.epoch
    started = time.perf_counter()
    if write is None:
        retried(rollbacks, lambda: ledger.vote_written(epoch.epoch_id, epoch.fencing_token, {}))
    else:
        write(epoch)
    write_ms = (time.perf_counter() - started) * 1000
    committing = CallTimedHook()
    _ = committing.settings
    started = time.perf_counter()
    with committing.one_admin_client():
        retried(
            rollbacks,
            lambda: EpochProtocol(ledger, kafka=lambda: committing).commit(epoch.epoch_id, pipeline=spec),
        )
    commit_ms = (time.perf_counter() - started) * 1000
    calls = {f"reserve.{name}": ms for name, ms in reserving.calls.items()}
    calls.update({f"commit.{name}": ms for name, ms in committing.calls.items()})
    return EpochSample(
        spec.name,
        epoch.epoch_id,
        round_no,
        reserve_ms,
        reserving.broker_ms,
        commit_ms,
        committing.broker_ms,
        {name: round(ms, 1) for name, ms in calls.items()},
        write_ms,
        time.monotonic(),
    )


def retried(rollbacks: Counter[str], step: Any) -> Any:
    """``step()``, again (up to :data:`RETRIES` times) when the server rolled its
    transaction back (40001 serialization failure, 40P01 deadlock), each counted."""
    for attempt in range(1, RETRIES + 1):
        try:
            return step()
        except TransactionRollbackError as exc:
            rollbacks[exc.pgcode or "40000"] += 1
            if attempt == RETRIES:
                raise
            time.sleep(0.01 * attempt)
    raise AssertionError("unreachable")
