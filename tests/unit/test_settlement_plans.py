"""What recovery and release plan for each open epoch, and the fencing verdict of a writer."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from airflow_provider_eo.ledger.model.epoch import Epoch
from airflow_provider_eo.ledger.model.runs import RunIdentity
from airflow_provider_eo.ledger.model.states import EpochKind, EpochState
from airflow_provider_eo.ledger.planning.fencing import AlreadyDone, Fenced, WriteLease, write_permission
from airflow_provider_eo.ledger.planning.recovery_plan import Action, plan_recovery, plan_release

TOKEN = "11111111-1111-1111-1111-111111111111"
OTHER = "22222222-2222-2222-2222-222222222222"
ME = RunIdentity("eo_stream__p", "run-me")


def epoch(epoch_id: int, state: EpochState, run_id: str, kind: EpochKind = EpochKind.STREAM) -> Epoch:
    dag_id = "eo_stream__p" if kind is EpochKind.STREAM else "eo_backfill__p"
    return Epoch(epoch_id, "p", kind, state, TOKEN, dag_id, run_id, datetime(2026, 1, 1, tzinfo=UTC))


def steps(plan: object) -> list[tuple[int, str, str]]:
    return [(s.epoch.epoch_id, s.action.value, s.reason) for s in plan.steps]  # type: ignore[attr-defined]


def test_recovery_commits_written_keeps_own_and_live_aborts_the_rest_in_epoch_order() -> None:
    live = {RunIdentity("eo_stream__p", "run-live")}
    asked: list[RunIdentity] = []

    def is_live(run: RunIdentity) -> bool:
        asked.append(run)
        return run in live

    open_epochs = [
        epoch(7, EpochState.RESERVED, "run-dead"),
        epoch(3, EpochState.WRITTEN, "run-dead"),
        epoch(5, EpochState.RESERVED, "run-live"),
        epoch(4, EpochState.RESERVED, "run-me"),
        epoch(6, EpochState.WRITTEN, "run-me"),
    ]
    plan = plan_recovery(open_epochs, ME, is_live)
    assert steps(plan) == [
        (3, "commit", "WRITTEN: its data is in HBase"),
        (4, "keep", "RESERVED by this run"),
        (5, "keep", "RESERVED by live run eo_stream__p/run-live"),
        (6, "commit", "WRITTEN: its data is in HBase"),
        (7, "abort", "recovery by eo_stream__p/run-me: owning run eo_stream__p/run-dead is not live"),
    ]
    assert (plan.ids(Action.COMMIT), plan.ids(Action.ABORT), plan.ids(Action.KEEP)) == ([3, 6], [7], [4, 5])
    # liveness is asked only about other runs' RESERVED epochs
    assert asked == [RunIdentity("eo_stream__p", "run-live"), RunIdentity("eo_stream__p", "run-dead")]


def test_release_settles_only_the_runs_own_epochs() -> None:
    run = RunIdentity("eo_backfill__p", "bf-1")
    open_epochs = [
        epoch(9, EpochState.RESERVED, "bf-1", EpochKind.BACKFILL),
        epoch(8, EpochState.WRITTEN, "bf-1", EpochKind.BACKFILL),
        epoch(10, EpochState.RESERVED, "bf-2", EpochKind.BACKFILL),
        epoch(11, EpochState.WRITTEN, "bf-2", EpochKind.BACKFILL),
    ]
    assert steps(plan_release(open_epochs, run)) == [
        (8, "commit", "WRITTEN by this run"),
        (9, "abort", "backfill run bf-1 ended before its commit"),
    ]


@pytest.mark.parametrize(
    ("state", "token", "expected"),
    [
        (EpochState.RESERVED, TOKEN, WriteLease),
        (EpochState.RESERVED, None, WriteLease),
        (EpochState.RESERVED, OTHER, "token"),
        (EpochState.WRITTEN, TOKEN, AlreadyDone),
        (EpochState.COMMITTED, TOKEN, AlreadyDone),
        (EpochState.WRITTEN, None, "state"),
        (EpochState.WRITTEN, OTHER, "state"),
        (EpochState.COMMITTED, OTHER, "state"),
        (EpochState.ABORTED, TOKEN, "state"),
        (EpochState.ABORTED, OTHER, "state"),
        (EpochState.ABORTED, None, "state"),
    ],
)
def test_write_permission(state: EpochState, token: str | None, expected: object) -> None:
    verdict = write_permission(epoch(1, state, "r"), token)
    if expected == "token":
        assert verdict == Fenced(epoch(1, state, "r"), token_mismatch=True)
        assert verdict.reason == "fencing token does not match the epoch's"
    elif expected == "state":
        assert verdict == Fenced(epoch(1, state, "r"), token_mismatch=False)
        assert verdict.reason == f"epoch is {state.value}, not RESERVED"
    elif expected is WriteLease:
        assert verdict == WriteLease(epoch(1, state, "r"), TOKEN)
    else:
        assert verdict == AlreadyDone(epoch(1, state, "r"))
