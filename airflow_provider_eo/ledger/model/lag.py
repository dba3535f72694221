"""Lag: the one definition the CLI (``eo-ledger lag``), the Epochs page and the epoch
metrics (``eo.partition.lag``) share."""

from __future__ import annotations


def lag(position: int, high_watermark: int) -> int:
    """Offsets from ``position`` (a stream cursor, or a committed range's end) up to the
    partition's high watermark; never negative (a position past the high watermark, as
    after a topic was re-created, is no lag)."""
    return max(high_watermark - position, 0)
