"""``eo-ledger epoch ID`` (with its history) and ``eo-ledger history --pipeline P``: read-only.

``epoch ID`` prints ``Epoch.to_summary()`` plus ``history``: its transitions oldest first,
each ``{from, to, at, actor_kind, actor, reason}`` (``from`` null: its creation).
``history --pipeline P [--limit N]`` prints the pipeline's ``limit`` newest transitions
and cursor moves (seeks, resets) merged by time, newest first
(:meth:`Transition.to_event`, :meth:`CursorMove.to_event`). An unknown pipeline is a
refusal (exit 2); nothing here changes the ledger.
"""

from __future__ import annotations

import argparse
from typing import Any

from airflow_provider_eo.ledger.model.history import epoch_detail
from airflow_provider_eo.ledger.model.ledger_roles import LedgerReads

DEFAULT_HISTORY_LIMIT = 100
#: The message of ``RefusedLookup`` when ``history`` names a pipeline the ledger lacks.
UNKNOWN_PIPELINE = "unknown pipeline {pipeline!r}: the ledger has no such pipeline (see eo-ledger pipelines)"


def add_history_parser(sub: Any) -> None:
    """Register ``history`` on the ``eo-ledger`` subparsers ``sub``."""
    history = sub.add_parser("history", help="a pipeline's epoch transitions and cursor moves, newest first")
    history.add_argument("--pipeline", required=True)
    history.add_argument(
        "--limit",
        type=int,
        default=DEFAULT_HISTORY_LIMIT,
        help=f"at most N events (default {DEFAULT_HISTORY_LIMIT})",
    )


def epoch(ledger: LedgerReads, epoch_id: int) -> dict[str, Any]:
    """``eo-ledger epoch ID``: the epoch's summary, the digest of the mapping it was reserved
    with (``spec_digest``; ``eo-ledger spec DIGEST`` prints that spec) and its ``history``
    (oldest first); ``EpochNotFound`` for an unknown id."""
    found = ledger.get_epoch(epoch_id)
    return epoch_detail(found.to_summary(), found.spec_digest, ledger.history(epoch_id))


def recorded_spec(ledger: LedgerReads, digest: str, refused: type[Exception]) -> dict[str, Any]:
    """``eo-ledger spec DIGEST``: ``{digest, spec}``, the spec the ledger recorded under a mapping
    digest; raises ``refused`` (exit 2) for a digest it does not hold."""
    spec = ledger.pipeline_spec(digest)
    if spec is None:
        raise refused(f"no spec recorded under digest {digest!r} (eo-ledger epoch ID shows an epoch's)")
    return {"digest": digest, "spec": spec}


def pipeline_history(
    ledger: LedgerReads, args: argparse.Namespace, refused: type[Exception]
) -> dict[str, Any]:
    """``eo-ledger history``: ``{pipeline, limit, events: [...]}``; raises ``refused`` (exit
    2) for an unknown pipeline or a limit below 1."""
    if args.limit < 1:
        raise refused(f"--limit must be >= 1, not {args.limit}")
    try:
        events = ledger.pipeline_history(args.pipeline, args.limit)
    except LookupError:
        raise refused(UNKNOWN_PIPELINE.format(pipeline=args.pipeline)) from None
    return {"pipeline": args.pipeline, "limit": args.limit, "events": [event.to_event() for event in events]}
