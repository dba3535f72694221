"""Exceptions of the epoch ledger. Every message names the epoch/partition concerned."""

from __future__ import annotations

from airflow_provider_eo.errors import EoError


class LedgerError(EoError):
    """Base class of every ledger error (the ledger category of :mod:`airflow_provider_eo.errors`)."""


class LedgerUnavailable(LedgerError):
    """The ledger database could not be reached, or the connection broke mid-transaction.

    ``outcome_unknown`` is True only when the connection broke while committing: the
    transaction may or may not have been applied (every caller's step is idempotent
    or re-checked by recovery). Otherwise the transaction was rolled back.
    """

    def __init__(self, where: str, detail: str, *, outcome_unknown: bool = False) -> None:
        self.where = where
        self.outcome_unknown = outcome_unknown
        outcome = (
            "the connection broke while committing: the transaction may or may not have been applied"
            if outcome_unknown
            else "nothing was changed"
        )
        super().__init__(f"epoch ledger unavailable at {where} ({outcome}): {detail}")


class EpochNotFound(LedgerError):
    """No epoch with this id."""

    def __init__(self, epoch_id: int) -> None:
        self.epoch_id = epoch_id
        super().__init__(f"epoch {epoch_id} does not exist")


class PipelineNotFound(LedgerError):
    """No pipeline of this name in the ledger."""

    def __init__(self, pipeline: str) -> None:
        self.pipeline = pipeline
        super().__init__(f"pipeline {pipeline!r} does not exist")


class EpochOfAnotherPipeline(LedgerError, ValueError):
    """The epoch exists but belongs to another pipeline than the one named (nothing was changed)."""

    def __init__(self, epoch_id: int, pipeline: str, expected: str) -> None:
        self.epoch_id = epoch_id
        self.pipeline = pipeline
        self.expected = expected
        super().__init__(f"epoch {epoch_id} belongs to pipeline {pipeline!r}, not {expected!r}")


class IllegalTransition(LedgerError):
    """A state change the state machine does not allow (nothing was changed)."""

    def __init__(self, epoch_id: int, state: str, attempted: str, hint: str = "") -> None:
        self.epoch_id = epoch_id
        self.state = state
        self.attempted = attempted
        message = f"epoch {epoch_id} is {state}: transition {state} -> {attempted} is not allowed"
        super().__init__(f"{message} ({hint})" if hint else message)


class FencedOut(LedgerError):
    """A vote whose fencing token or epoch state no longer matches (nothing was changed)."""

    def __init__(self, epoch_id: int, state: str, reason: str) -> None:
        self.epoch_id = epoch_id
        self.state = state
        super().__init__(f"vote on epoch {epoch_id} fenced out (epoch is {state}): {reason}")


class OpenEpochConflict(LedgerError):
    """Another run owns the pipeline's open stream epoch (or a conflicting backfill)."""

    def __init__(self, pipeline: str, epoch_id: int, state: str, dag_id: str, run_id: str) -> None:
        self.pipeline = pipeline
        self.epoch_id = epoch_id
        self.state = state
        self.dag_id = dag_id
        self.run_id = run_id
        super().__init__(
            f"pipeline {pipeline!r} already has open epoch {epoch_id} ({state}) "
            f"owned by dag_id={dag_id!r} run_id={run_id!r}"
        )


class DataLossError(LedgerError):
    """The next offset to read was deleted by retention (start below the low watermark)."""

    def __init__(self, topic: str, partition: int, expected_start: int, low_watermark: int) -> None:
        self.topic = topic
        self.partition = partition
        self.expected_start = expected_start
        self.low_watermark = low_watermark
        super().__init__(
            f"data loss on {topic}[{partition}]: next offset is {expected_start} but the low watermark "
            f"is {low_watermark}; offsets [{expected_start}, {low_watermark}) "
            f"({low_watermark - expected_start} records) were deleted before they were read. "
            "Set on_data_loss: record_gap to skip them with a recorded gap."
        )


class CursorBeyondHighWatermark(LedgerError):
    """The cursor lies past the partition's end: the topic was deleted and recreated."""

    def __init__(self, topic: str, partition: int, cursor: int, high_watermark: int) -> None:
        self.topic = topic
        self.partition = partition
        self.cursor = cursor
        self.high_watermark = high_watermark
        super().__init__(
            f"cursor of {topic}[{partition}] is {cursor} but its high watermark is {high_watermark}: "
            "the topic was probably deleted and recreated; the ledger will not guess where to resume"
        )


class InvalidRanges(LedgerError):
    """Backfill ranges that are empty, negative, duplicated or outside the watermarks."""


class SeekRefused(LedgerError):
    """``eo-ledger seek`` / ``reset`` refused (an open epoch, a target outside the
    watermarks, a partition that is not pinned, ...): nothing was changed, and the message
    says what to do. The CLI answers it with exit code 2."""
