"""Overlap a task's HBase writes with its Kafka reads: segments go out on a writer thread.

A :class:`SegmentPipeline` hands each segment to one background thread that calls
:meth:`SegmentWriter.write`, so while HBase applies segment ``n`` the task reads and maps
the records of segment ``n + 1``. Contract:

* segments are written one at a time, in the order submitted (the cell-version rule
  needs no more: each segment carries its own versions);
* at most ``depth`` segments wait in the queue; :meth:`submit` blocks beyond that,
  so a task's memory stays bounded whatever the range's size;
* the first write error stops the thread; the next :meth:`submit` or :meth:`finish`
  raises it (unchanged), and nothing submitted after it is written;
* :meth:`finish` returns only when every submitted segment is written; a task reports
  its range written only after it (a partial range is never reported);
* ``after_write`` runs on the writer thread after each non-empty segment is written.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable

from airflow_provider_eo.spark.hbase_sink.hbase_writer import SegmentWriter
from airflow_provider_eo.spark.hbase_sink.segments import Segment

_DONE = None


class SegmentPipeline:
    """One writer thread in front of a :class:`SegmentWriter` (see the module contract)."""

    def __init__(
        self, writer: SegmentWriter, *, depth: int = 2, after_write: Callable[[Segment], None] | None = None
    ) -> None:
        self.writer = writer
        self.after_write = after_write
        self._queue: queue.Queue[Segment | None] = queue.Queue(maxsize=depth)
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="eo-hbase-writer", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            segment = self._queue.get()
            if segment is _DONE:
                return
            if self._error is not None:
                continue  # drain without writing: the task fails anyway
            try:
                self.writer.write(segment)
                if self.after_write is not None and not segment.is_empty():
                    self.after_write(segment)
            except BaseException as exc:  # handed to the task's thread, raised there
                self._error = exc

    def _raise_error(self) -> None:
        if self._error is not None:
            raise self._error

    def submit(self, segment: Segment) -> None:
        """Queue one segment (blocks while ``depth`` are waiting); raises an earlier write's error."""
        self._raise_error()
        self._queue.put(segment)

    def finish(self) -> None:
        """Wait until every submitted segment is written; raises the first write error."""
        self.close()
        self._raise_error()

    def close(self) -> None:
        """Stop the thread after the queued segments (no error raised here)."""
        if self._thread.is_alive():
            self._queue.put(_DONE)
            self._thread.join()
