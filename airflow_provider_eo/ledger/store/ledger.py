"""``Ledger``: the PostgreSQL epoch ledger, where epochs are stored.

Each state-changing method is one guarded transaction of the state machine
(``states.TRANSITIONS``): it refuses what the table or the fencing token forbids. The
reservation transactions also enforce, atomically, what must hold at insert time (one
open stream epoch per pipeline, a run's retry gets its own epoch back, partition pins).
When to call which is :class:`~airflow_provider_eo.ledger.protocol.EpochProtocol`'s;
operators, the Spark driver and the CLI go through the protocol, not through these.

Every public method runs in its own short transaction (commit on success, rollback on
error) on one psycopg2 connection per instance, opened lazily; a broken connection is
dropped and reopened by the next call. Pending migrations are applied on first use.
An instance is safe to share between threads (calls are serialized by a lock), but
one instance per thread or process is the intended use.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from airflow_provider_eo.config.specs import PipelineSpec
from airflow_provider_eo.ledger.backfill_plan import validate_backfill_ranges
from airflow_provider_eo.ledger.models import DeadLetter, Epoch, PartitionRange
from airflow_provider_eo.ledger.offsets import OffsetSource, TopicPartition
from airflow_provider_eo.ledger.states import OPEN_STATES, EpochKind, EpochState
from airflow_provider_eo.ledger.store import dead_letters, queries, retention, transitions
from airflow_provider_eo.ledger.store.backfill_reserver import reserve_backfill
from airflow_provider_eo.ledger.store.connection import LedgerConnection
from airflow_provider_eo.ledger.store.cursors import stream_cursors
from airflow_provider_eo.ledger.store.epoch_rows import fetch_epoch, fetch_epochs
from airflow_provider_eo.ledger.store.migrate import applied_versions
from airflow_provider_eo.ledger.store.retention import PruneCount, PrunePolicy
from airflow_provider_eo.ledger.store.stream_reserver import reserve_stream

log = logging.getLogger(__name__)


class Ledger:
    """The epoch ledger at ``dsn`` (a libpq DSN/URI) or from a connection factory;
    ``conn_id`` (the Airflow connection it came from) is named in connection errors."""

    def __init__(
        self, dsn: str | Callable[[], Any], *, auto_migrate: bool = True, conn_id: str | None = None
    ) -> None:
        self._db = LedgerConnection(dsn, auto_migrate=auto_migrate, conn_id=conn_id)
        self._transaction = self._db.transaction

    def close(self) -> None:
        """Close the connection (the next call reopens one)."""
        self._db.close()

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def migrate(self) -> list[int]:
        """Apply pending migrations now; return the versions applied."""
        return self._db.migrate()

    def schema_versions(self) -> list[int]:
        """Migration versions recorded in the database."""
        with self._db.lock:
            return applied_versions(self._db.raw())

    # -- reservation ---------------------------------------------------------------
    def reserve_stream_epoch(
        self, spec: PipelineSpec, offsets: OffsetSource, *, dag_id: str, run_id: str
    ) -> Epoch | None:
        """Reserve the pipeline's next stream epoch, or None when there is no new data.

        One transaction, serialized per pipeline. Returns this run's already open stream
        epoch on a retry; raises ``OpenEpochConflict`` if another run owns one,
        ``DataLossError`` / ``CursorBeyondHighWatermark`` for unusable cursors. Newly seen
        partitions are pinned (committed) even when the call returns None or raises.
        """
        with self._transaction() as cur:
            outcome = reserve_stream(cur, spec, offsets, dag_id, run_id)
        if outcome.error is not None:
            raise outcome.error
        if outcome.epoch is not None:
            log.info(
                "reserved epoch_id=%s pipeline=%s kind=stream run=%s/%s ranges=%s records=%s",
                outcome.epoch.epoch_id, spec.name, dag_id, run_id, outcome.epoch.ranges_brief,
                outcome.epoch.record_count,
            )  # fmt: skip
        return outcome.epoch

    def reserve_backfill_epoch(
        self,
        spec: PipelineSpec | str,
        ranges: Iterable[PartitionRange],
        *,
        dag_id: str,
        run_id: str,
        watermarks: Mapping[TopicPartition, tuple[int, int]] | None = None,
    ) -> Epoch:
        """Reserve a backfill epoch over explicit ranges (``InvalidRanges`` if malformed or,
        with ``watermarks``, a new epoch outside them: the run's own epoch over the same
        ranges comes back even if retention has since moved past them). Cursors and pins
        are never touched."""
        pipeline = spec if isinstance(spec, str) else spec.name
        checked = validate_backfill_ranges(ranges)
        with self._transaction() as cur:
            epoch = reserve_backfill(cur, pipeline, checked, dag_id, run_id, watermarks)
        log.info(
            "reserved epoch_id=%s pipeline=%s kind=backfill run=%s/%s state=%s ranges=%s records=%s",
            epoch.epoch_id, pipeline, dag_id, run_id, epoch.state.value, epoch.ranges_brief,
            epoch.record_count,
        )  # fmt: skip
        return epoch

    # -- transitions ---------------------------------------------------------------
    def vote_written(
        self, epoch_id: int, fencing_token: str, metrics: Mapping[str, Any] | None = None
    ) -> Epoch:
        """RESERVED -> WRITTEN with ``metrics``, only with the epoch's fencing token.

        Raises ``FencedOut`` (nothing changed) otherwise; repeating a successful vote
        with the same token is a no-op.
        """
        with self._transaction() as cur:
            epoch = transitions.vote_written(cur, epoch_id, fencing_token, metrics)
        log.info("voted WRITTEN epoch_id=%s pipeline=%s metrics=%s", epoch_id, epoch.pipeline, epoch.metrics)
        return epoch

    def rotate_fencing_token(self, epoch_id: int) -> str:
        """Give a RESERVED epoch a new fencing token (fences out earlier writers); return it."""
        token = str(uuid.uuid4())
        with self._transaction() as cur:
            transitions.rotate_fencing_token(cur, epoch_id, token)
        return token

    def mark_committed(self, epoch_id: int) -> Epoch:
        """WRITTEN -> COMMITTED (call after publishing offsets); COMMITTED: no-op success.

        Raises ``IllegalTransition`` for RESERVED or ABORTED epochs.
        """
        with self._transaction() as cur:
            epoch, changed = transitions.mark_committed(cur, epoch_id)
        if changed:
            log.info(
                "COMMITTED epoch_id=%s pipeline=%s ranges=%s", epoch_id, epoch.pipeline, epoch.ranges_brief
            )
        return epoch

    def abort(self, epoch_id: int, reason: str, *, allow_written: bool = False) -> Epoch:
        """RESERVED -> ABORTED (its ranges return to the next reservation); ABORTED: no-op.

        WRITTEN -> ABORTED only with ``allow_written=True`` (explicit operator action);
        COMMITTED epochs cannot be aborted. Raises ``IllegalTransition``.
        """
        with self._transaction() as cur:
            epoch, changed = transitions.abort(cur, epoch_id, reason, allow_written=allow_written)
        if changed:
            log.warning(
                "ABORTED epoch_id=%s pipeline=%s reason=%s ranges=%s",
                epoch_id,
                epoch.pipeline,
                reason,
                epoch.ranges_brief,
            )
        return epoch

    # -- queries -------------------------------------------------------------------
    def get_epoch(self, epoch_id: int) -> Epoch:
        """The epoch with its ranges; raises ``EpochNotFound``."""
        with self._transaction() as cur:
            return fetch_epoch(cur, epoch_id)

    def open_epochs(self, pipeline: str, kind: EpochKind | str | None = None) -> list[Epoch]:
        """RESERVED and WRITTEN epochs of ``pipeline`` (of one kind if given), oldest first."""
        return self.list_epochs(pipeline=pipeline, state=[s.value for s in OPEN_STATES], kind=kind)

    def list_epochs(
        self,
        pipeline: str | None = None,
        state: EpochState | str | Sequence[str] | None = None,
        kind: EpochKind | str | None = None,
        min_id: int | None = None,
        max_id: int | None = None,
        *,
        limit: int | None = None,
        newest_first: bool = False,
    ) -> list[Epoch]:
        """Epochs matching every given filter (``state`` may be one state or several)."""
        states = [state] if isinstance(state, str) else state
        with self._transaction() as cur:
            return fetch_epochs(
                cur,
                pipeline=pipeline,
                states=None if states is None else [str(s) for s in states],
                kind=None if kind is None else str(kind),
                min_id=min_id,
                max_id=max_id,
                limit=limit,
                newest_first=newest_first,
            )

    def cursors(self, pipeline: str) -> dict[TopicPartition, int]:
        """Next stream offset per pinned partition of ``pipeline``."""
        with self._transaction() as cur:
            return stream_cursors(cur, pipeline)

    def partition_pins(self, pipeline: str) -> dict[TopicPartition, tuple[int, str]]:
        """Pinned ``(initial_offset, initial_source)`` per partition of ``pipeline``."""
        with self._transaction() as cur:
            cur.execute(
                'SELECT topic, "partition", initial_offset, initial_source FROM eo.partitions'
                ' WHERE pipeline = %s ORDER BY topic, "partition"',
                (pipeline,),
            )
            return {(topic, part): (int(offset), source) for topic, part, offset, source in cur.fetchall()}

    def gaps(self, pipeline: str) -> list[dict[str, Any]]:
        """Recorded data-loss gaps of ``pipeline`` (JSON-serializable)."""
        with self._transaction() as cur:
            return [gap.to_json() for gap in queries.gaps_by_pipeline(cur, pipeline).get(pipeline, [])]

    def epoch_counts(self, pipeline: str) -> dict[str, int]:
        """Number of epochs of ``pipeline`` per state (every state present, zero included)."""
        with self._transaction() as cur:
            found = queries.epoch_counts_by_pipeline(cur, pipeline).get(pipeline, {})
        return {state.value: found.get(state, 0) for state in EpochState}

    def list_pipelines(self) -> list[str]:
        """Names of pipelines known to the ledger, sorted."""
        with self._transaction() as cur:
            return queries.pipeline_names(cur)

    def epochs(self, wanted: queries.EpochFilter) -> list[Epoch]:
        """Epochs matching ``wanted`` with their ranges, oldest first, in one transaction
        (with ``wanted.limit``: the newest ``limit`` of them)."""
        with self._transaction() as cur:
            return queries.matching_epochs(cur, wanted)

    def pipeline_overviews(self, pipeline: str | None = None) -> list[queries.PipelineOverview]:
        """Every pipeline's overview (or only ``pipeline``'s; [] if unknown), sorted by name,
        in one transaction of a fixed number of statements."""
        with self._transaction() as cur:
            return queries.pipeline_overviews(cur, pipeline)

    # -- retention -----------------------------------------------------------------
    def prune_plan(self, pipelines: Sequence[str] | None, policy: PrunePolicy) -> list[PruneCount]:
        """What :meth:`prune` would delete now per pipeline (every pipeline when None),
        sorted by name, read in one transaction; nothing changes. ``LookupError`` names
        unknown pipelines."""
        with self._transaction() as cur:
            names = retention.known_pipelines(cur, pipelines)
            return [retention.count_prunable(cur, name, policy) for name in names]

    def prune(
        self, pipelines: Sequence[str] | None, policy: PrunePolicy, *, batch_size: int = 1000
    ) -> list[PruneCount]:
        """Delete settled epochs matching ``policy`` (store/retention.py: open epochs,
        cursors, pins, gaps, dead letters and the epochs these name are kept), in
        transactions of at most ``batch_size`` epochs; what was deleted per pipeline."""
        with self._transaction() as cur:
            names = retention.known_pipelines(cur, pipelines)
        return [
            retention.prune_pipeline(self._transaction, name, policy, batch_size=batch_size) for name in names
        ]

    # -- dead letters --------------------------------------------------------------
    def record_dead_letters(self, rows: Iterable[DeadLetter | Mapping[str, Any]]) -> int:
        """Idempotently store dead letters (a replay overwrites the same offsets)."""
        with self._transaction() as cur:
            return dead_letters.upsert_dead_letters(cur, rows)

    def dead_letter_count(self, pipeline: str, epoch_id: int | None = None) -> int:
        """Number of dead letters of ``pipeline`` (of one epoch if given)."""
        with self._transaction() as cur:
            return dead_letters.count_dead_letters(cur, pipeline, epoch_id)

    def list_dead_letters(self, pipeline: str, limit: int | None = None) -> list[dict[str, Any]]:
        """Dead letters of ``pipeline`` as JSON-serializable dicts."""
        with self._transaction() as cur:
            return dead_letters.list_dead_letters(cur, pipeline, limit)
