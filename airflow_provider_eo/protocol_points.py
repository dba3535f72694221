"""Named points of the epoch protocol, each between two durable effects.

The product calls :func:`passed` at each point below, which raises the Python audit event
``eo.protocol_point`` with the point's name (``sys.audit``). With no audit hook installed,
as in production, that does nothing. The fault-injection suite installs a hook in its own
processes to kill or hang them at an exact step (``tests/faults/crash_points.py``,
docs/faults.md): the product imports, reads and configures nothing for it.

| Point | Where |
|---|---|
| ``reserve.in_transaction`` | stream reservation (``ledger/protocol/stream_reservation.py``): epoch inserted, transaction open |
| ``reserve.after_insert`` | ``EpochProtocol.reserve_stream``: the epoch is committed, the reserve task has not returned |
| ``spark.task.after_segment`` | a Spark task (Python worker, ``spark/task/write_task.py``): after each HBase segment |
| ``spark.after_last_batch`` | the Spark driver (``spark/driver/write_epoch.py``): every HBase batch written, before the vote |
| ``spark.after_vote`` | the Spark driver: voted WRITTEN, before the application exits |
| ``commit.before_publish`` | ``EpochProtocol.commit``: the epoch read WRITTEN, group offsets not yet published |
| ``commit.after_publish`` | ``EpochProtocol.commit``: group offsets published, before marking COMMITTED |
| ``dead_letters.before_commit`` | dead-letter publication (``clients/dead_letter_topic.py``): a batch and its marker produced, Kafka transaction not committed |
| ``dead_letters.after_commit`` | dead-letter publication (``ledger/protocol/dead_letter_publication.py``): a batch's Kafka transaction committed, nothing else done |
"""  # noqa: E501

from __future__ import annotations

import sys

#: The audit event each point raises, with the point's name as its one argument.
AUDIT_EVENT = "eo.protocol_point"
POINT_NAMES = (
    "reserve.in_transaction",
    "reserve.after_insert",
    "spark.task.after_segment",
    "spark.after_last_batch",
    "spark.after_vote",
    "commit.before_publish",
    "commit.after_publish",
    "dead_letters.before_commit",
    "dead_letters.after_commit",
)
_KNOWN = frozenset(POINT_NAMES)


def passed(name: str) -> None:
    """Report that this process has reached point ``name``: the audit event
    :data:`AUDIT_EVENT` (an installed hook may never return, e.g. when it kills the process).

    Raises ValueError for a name not in :data:`POINT_NAMES`.
    """
    if name not in _KNOWN:
        raise ValueError(f"unknown protocol point {name!r}; known: {', '.join(POINT_NAMES)}")
    sys.audit(AUDIT_EVENT, name)
