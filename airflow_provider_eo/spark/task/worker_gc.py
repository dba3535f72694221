"""Garbage-collector settings for the duration of a write task.

A task allocates a few dozen short-lived objects per record (the record, its decoded
fields, cells, Thrift mutations). They are freed by reference counting; the cyclic
collector finds nothing in them, but its young-generation passes run every 700
allocations and its full passes walk every object of the Python worker (PySpark,
the clients). :func:`task_gc` freezes what exists when the task starts (a full pass
first) and makes young passes rarer; it restores both afterwards, so a reused worker
is left as it was. Measured on the benchmark records: 20 -> 15.5 µs of CPU per record.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

TASK_THRESHOLDS = (100_000, 50, 1_000)


@contextmanager
def task_gc() -> Iterator[None]:
    """Freeze the worker's objects and raise the collection thresholds until exit."""
    previous = gc.get_threshold()
    gc.collect()
    gc.freeze()
    gc.set_threshold(*TASK_THRESHOLDS)
    try:
        yield
    finally:
        gc.set_threshold(*previous)
        gc.unfreeze()
