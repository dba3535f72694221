"""The XCom values of the coordinator operators: what downstream tasks and users read."""

from __future__ import annotations

from typing import Any

from airflow_provider_eo.ledger.model.epoch import Epoch
from airflow_provider_eo.ledger.protocol import Committed


def epoch_summary(epoch: Epoch) -> dict[str, Any]:
    """A reserved (or written) epoch: :meth:`Epoch.to_summary` plus ``fencing_token``, which
    the write task is handed (``dags/factory.py``)."""
    return {**epoch.to_summary(), "fencing_token": str(epoch.fencing_token)}


def commit_summary(outcome: Committed) -> dict[str, Any]:
    """A commit: :meth:`Epoch.to_summary` of the committed epoch plus ``action``
    (``"committed"``, or ``"noop"`` when it was committed already), ``published``
    (``[{topic, partition, offset}]`` sent to the consumer group, by topic and partition)
    and ``dead_letters`` (the publication that followed, ``DeadLetterPublication.to_json``)."""
    return {
        **outcome.epoch.to_summary(),
        "action": "noop" if outcome.already_committed else "committed",
        "published": outcome.published_json(),
        "dead_letters": outcome.dead_letters.to_json() if outcome.dead_letters else None,
    }
