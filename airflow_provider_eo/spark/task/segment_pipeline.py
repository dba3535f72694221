"""Overlap a task's HBase writes with its Kafka reads: segments go out on a writer thread.

A :class:`SegmentPipeline` hands each segment to one background thread that calls
:meth:`SegmentWriter.write`, so while HBase applies segment ``n`` the task reads and maps
the records of segment ``n + 1``. Contract:

* segments are written in the order submitted (the cell-version rule needs no more: each
  segment carries its own versions), each alone, or, given a ``batcher``
  (:class:`~airflow_provider_eo.spark.hbase_sink.segment_batches.SegmentBatcher`), with the
  consecutive segments it groups into one batch (``SegmentWriter.write_batch``: a pack's small
  ranges share their HBase calls); a batch is complete once full or at :meth:`finish`;
* at most ``depth`` segments (batches) wait in the queue; :meth:`submit` blocks beyond that,
  so a task's memory stays bounded whatever the range's size (with a batcher: one more batch,
  the one being filled, at most ``batch_bytes`` or one segment);
* the first write error stops the thread; the next :meth:`submit` or :meth:`finish`
  raises it (unchanged), and nothing submitted after it is written;
* :meth:`finish` returns only when every submitted segment is written; a task reports
  its range written only after it (a partial range is never reported);
* ``after_write`` runs on the writer thread after each non-empty segment is written (with a
  batcher: for each segment of a batch once the whole batch is written).
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable

from airflow_provider_eo.spark.hbase_sink.hbase_writer import SegmentWriter
from airflow_provider_eo.spark.hbase_sink.segment_batches import SegmentBatch, SegmentBatcher
from airflow_provider_eo.spark.hbase_sink.segments import Segment

_DONE = None


class SegmentPipeline:
    """One writer thread in front of a :class:`SegmentWriter` (see the module contract)."""

    def __init__(
        self,
        writer: SegmentWriter,
        *,
        depth: int = 2,
        after_write: Callable[[Segment], None] | None = None,
        batcher: SegmentBatcher | None = None,
    ) -> None:
        self.writer = writer
        self.after_write = after_write
        self.batcher = batcher
        #: Batches written so far (each one segment without a batcher); read it after :meth:`finish`.
        self.batches = 0
        self._queue: queue.Queue[SegmentBatch | None] = queue.Queue(maxsize=depth)
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="eo-hbase-writer", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            batch = self._queue.get()
            if batch is _DONE:
                return
            if self._error is not None:
                continue  # drain without writing: the task fails anyway
            try:
                self.writer.write_batch(batch)
                self.batches += 1
                if self.after_write is not None:
                    for segment in batch.segments:
                        if not segment.is_empty():
                            self.after_write(segment)
            except BaseException as exc:  # handed to the task's thread, raised there
                self._error = exc

    def _raise_error(self) -> None:
        if self._error is not None:
            raise self._error

    def submit(self, segment: Segment, owner: str = "") -> None:
        """Queue one segment of range ``owner`` (its label: named when its write fails), alone or
        into the batch being filled (blocks while ``depth`` are waiting); raises an earlier
        write's error."""
        self._raise_error()
        if self.batcher is None:
            batch = SegmentBatch()
            batch.add(segment, owner)
            self._queue.put(batch)
            return
        for batch in self.batcher.add(segment, owner):
            self._queue.put(batch)

    def finish(self) -> None:
        """Wait until every submitted segment is written (the batch being filled included);
        raises the first write error."""
        if self.batcher is not None and self._error is None:
            last = self.batcher.finish()
            if last is not None and self._thread.is_alive():
                self._queue.put(last)
        self.close()
        self._raise_error()

    def close(self) -> None:
        """Stop the thread after the queued segments (no error raised here)."""
        if self._thread.is_alive():
            self._queue.put(_DONE)
            self._thread.join()
