"""Direct access to the ledger for tests and benchmarks, below the protocol.

Tests set up exact ledger states (an epoch over chosen ranges, a writer fenced out by a
new token) and read rows the product never reads alone (partition pins). These run the
protocol's own reservation transactions, or plain SQL, inside ``Ledger.transaction``;
product code never uses this module (it is not part of the package).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping

from airflow_provider_eo.config.specs import PipelineSpec
from airflow_provider_eo.ledger.model.epoch import Epoch, PartitionRange
from airflow_provider_eo.ledger.model.offsets import OffsetSource, TopicPartition
from airflow_provider_eo.ledger.model.runs import RunIdentity
from airflow_provider_eo.ledger.model.states import EpochState
from airflow_provider_eo.ledger.planning.backfill_plan import validate_backfill_ranges
from airflow_provider_eo.ledger.protocol.backfill_reservation import reserve_backfill
from airflow_provider_eo.ledger.protocol.stream_reservation import reserve_stream
from airflow_provider_eo.ledger.store.postgres_ledger import Ledger


def reserve_stream_epoch(
    ledger: Ledger, spec: PipelineSpec, offsets: OffsetSource, *, dag_id: str, run_id: str
) -> Epoch | None:
    """The stream reservation transaction for run ``(dag_id, run_id)`` over ``offsets``:
    the epoch, or None when there is no new data. Raises what the planners refuse with
    (after committing the pins, as the protocol does)."""
    with ledger.transaction() as cur:
        outcome = reserve_stream(cur, spec, offsets, RunIdentity(dag_id, run_id))
    if outcome.error is not None:
        raise outcome.error
    return outcome.epoch


def reserve_backfill_epoch(
    ledger: Ledger,
    spec: PipelineSpec | str,
    ranges: Iterable[PartitionRange],
    *,
    dag_id: str,
    run_id: str,
    watermarks: Mapping[TopicPartition, tuple[int, int]] | None = None,
) -> Epoch:
    """The backfill reservation transaction over explicit ``ranges`` (``InvalidRanges`` if
    malformed or, with ``watermarks``, a new epoch outside them)."""
    pipeline = spec if isinstance(spec, str) else spec.name
    checked = validate_backfill_ranges(ranges)
    with ledger.transaction() as cur:
        run = RunIdentity(dag_id, run_id)
        return reserve_backfill(
            cur, pipeline, checked, run, watermarks, spec=None if isinstance(spec, str) else spec
        )


def rotate_fencing_token(ledger: Ledger, epoch_id: int) -> str:
    """Give a RESERVED epoch a new fencing token, fencing out its earlier writers (what a
    takeover by a newer attempt would do); return the token. ``ValueError`` in any other
    state (nothing changed)."""
    token = str(uuid.uuid4())
    with ledger.transaction() as cur:
        cur.execute(
            "UPDATE eo.epochs SET fencing_token = %s WHERE epoch_id = %s AND state = %s",
            (token, epoch_id, EpochState.RESERVED.value),
        )
        if cur.rowcount != 1:
            raise ValueError(f"epoch {epoch_id} is not RESERVED: only RESERVED epochs get a new token")
    return token


def partition_pins(ledger: Ledger, pipeline: str) -> dict[TopicPartition, tuple[int, str]]:
    """Pinned ``(initial_offset, initial_source)`` per partition of ``pipeline``."""
    with ledger.transaction() as cur:
        cur.execute(
            'SELECT topic, "partition", initial_offset, initial_source FROM eo.partitions'
            ' WHERE pipeline = %s ORDER BY topic, "partition"',
            (pipeline,),
        )
        return {(topic, part): (int(offset), source) for topic, part, offset, source in cur.fetchall()}
