"""The epoch protocol's public surface: everything outside ``ledger/`` imports the
protocol from here (tests/unit/test_layers.py holds that line), never its transaction
scripts.

* :class:`EpochProtocol`: an epoch's life (``epoch_protocol.py``, start there);
* :class:`OperatorTools`: an operator's acts by hand (``operator_tools.py``);
* the typed outcomes (``outcomes.py``, ``dead_letter_publication.DeadLetterPublication``);
* :func:`read_positions`: the wait step's read of cursors and watermarks (``position_reads.py``).
"""

from __future__ import annotations

from airflow_provider_eo.ledger.protocol import dead_letter_publication as dead_letter_headers
from airflow_provider_eo.ledger.protocol.dead_letter_publication import DeadLetterPublication, letter_record
from airflow_provider_eo.ledger.protocol.epoch_protocol import EpochProtocol, PipelineLookup
from airflow_provider_eo.ledger.protocol.operator_tools import OperatorTools
from airflow_provider_eo.ledger.protocol.outcomes import (
    AlreadyCommitted,
    AlreadyWritten,
    Committed,
    NothingToReserve,
    Reservation,
    Reserved,
    Settled,
)
from airflow_provider_eo.ledger.protocol.position_reads import read_positions

__all__ = [
    "AlreadyCommitted",
    "AlreadyWritten",
    "Committed",
    "DeadLetterPublication",
    "EpochProtocol",
    "NothingToReserve",
    "OperatorTools",
    "PipelineLookup",
    "Reservation",
    "Reserved",
    "Settled",
    "dead_letter_headers",
    "letter_record",
    "read_positions",
]
