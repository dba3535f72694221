"""Named points of the epoch protocol, each between two durable effects, and their one hook.

The product calls :func:`passed` at each point below. By default it does nothing: a
lookup of one environment variable. When ``EO_PROTOCOL_POINT_HANDLER`` names a handler
(``package.module:function``), the handler is imported once per process and called with the
point's name; the fault-injection suite uses this to kill or hang a process at an exact
step (``tests/faults/crash_points.py``, docs/faults.md). Production never sets it.

| Point | Where |
|---|---|
| ``reserve.in_transaction`` | stream reservation (``ledger/store/stream_reserver.py``): epoch inserted, transaction open |
| ``reserve.after_insert`` | ``EpochProtocol.reserve_stream``: the epoch is committed, the reserve task has not returned |
| ``spark.task.after_segment`` | a Spark task (Python worker, ``spark/write_task.py``): after each HBase segment |
| ``spark.after_last_batch`` | the Spark driver (``spark/driver.py``): every HBase batch written, before the vote |
| ``spark.after_vote`` | the Spark driver: voted WRITTEN, before the application exits |
| ``commit.before_publish`` | ``EpochProtocol.commit``: the epoch read WRITTEN, group offsets not yet published |
| ``commit.after_publish`` | ``EpochProtocol.commit``: group offsets published, before marking COMMITTED |
"""  # noqa: E501

from __future__ import annotations

import importlib
import os
from collections.abc import Callable

HANDLER_ENV = "EO_PROTOCOL_POINT_HANDLER"
POINT_NAMES = (
    "reserve.in_transaction",
    "reserve.after_insert",
    "spark.task.after_segment",
    "spark.after_last_batch",
    "spark.after_vote",
    "commit.before_publish",
    "commit.after_publish",
)

_loaded: tuple[str, Callable[[str], None]] | None = None


def passed(name: str) -> None:
    """Report that this process has reached point ``name`` (one of :data:`POINT_NAMES`).

    Does nothing unless ``EO_PROTOCOL_POINT_HANDLER`` is set; then calls its handler with
    ``name`` (the handler may never return, e.g. when it kills the process). Raises
    ValueError for a name not in :data:`POINT_NAMES` or a malformed handler spec, and
    ImportError/AttributeError when the handler cannot be found (only with the variable set).
    """
    spec = os.environ.get(HANDLER_ENV)
    if not spec:
        return
    if name not in POINT_NAMES:
        raise ValueError(f"unknown protocol point {name!r}; known: {', '.join(POINT_NAMES)}")
    handler_for(spec)(name)


def handler_for(spec: str) -> Callable[[str], None]:
    """The function ``spec`` (``package.module:function``) names, imported once per process
    (again only when the spec changes); ValueError when ``spec`` is not of that form."""
    global _loaded
    if _loaded is None or _loaded[0] != spec:
        module_name, sep, function_name = spec.partition(":")
        if not sep or not module_name or not function_name:
            raise ValueError(f"{HANDLER_ENV} must be 'package.module:function', got {spec!r}")
        handler: Callable[[str], None] = getattr(importlib.import_module(module_name), function_name)
        _loaded = (spec, handler)
    return _loaded[1]
