"""Which wait polls store their lag sample (the commit's own sample is the commit path's).

:class:`WaitSampler` decides which polls of one wait store theirs: the first, the one that
finds records (the lag the run then reserves), and otherwise one every
:func:`~airflow_provider_eo.ledger.model.lag.wait_sample_interval` seconds, so a
10,000-partition pipeline polled every few seconds adds about 100 rows a minute, not
10,000 a poll.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from airflow_provider_eo.ledger.model.lag import (
    LagSampleSink,
    store_sample,
    wait_sample,
    wait_sample_interval,
)
from airflow_provider_eo.ledger.planning.new_records import PipelinePositions


class WaitSampler:
    """The lag samples of one wait (the operator's check, or one trigger's polls).

    :param clock: seconds on a monotonic clock (``time.monotonic``).
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._stored_at: float | None = None

    def due(self, positions: PipelinePositions, ready: bool) -> bool:
        """Whether this poll stores its sample (see the module doc)."""
        if self._stored_at is None or ready:
            return True
        return self._clock() - self._stored_at >= wait_sample_interval(len(positions.cursors))

    def record(self, sink: LagSampleSink, positions: PipelinePositions, ready: bool) -> bool:
        """Store this poll's sample when :meth:`due`; never raises. Returns whether stored."""
        if not self.due(positions, ready):
            return False
        sample = wait_sample(positions.pipeline, positions.cursors, positions.watermarks)
        stored = store_sample(sink, sample, f"partitions={len(positions.cursors)}")
        if stored:
            self._stored_at = self._clock()
        return stored
