"""Dead letters: every record the mapping refuses has its ledger row, and no row is
extra (no I/O).

Contract of :func:`check_dead_letters`: under ``bad_records: dead_letter`` the offsets of
a range's refused records and the ledger's dead-letter offsets inside the range must be
the same set: a refused record without a row is ``dead_letter_missing``, a row without a
refused record ``dead_letter_extra``. Under ``fail`` a committed range holds no refused
record: each one is ``record_unmappable`` (the mapping changed since, or the write was wrong).
"""

from __future__ import annotations

from collections.abc import Iterable

from airflow_provider_eo.audit.expected_writes import BadRecordSeen
from airflow_provider_eo.audit.findings import Finding, FindingKind
from airflow_provider_eo.config.specs import BadRecordPolicy
from airflow_provider_eo.ledger.model.epoch import PartitionRange


def check_dead_letters(
    epoch_id: int,
    rng: PartitionRange,
    policy: BadRecordPolicy,
    refused: Iterable[BadRecordSeen],
    ledger_offsets: Iterable[int],
) -> list[Finding]:
    """The range's dead-letter findings (see the module contract)."""
    refused = sorted(refused, key=lambda bad: bad.offset)
    where = (epoch_id, rng.topic, rng.partition)
    if policy == "fail":
        return [
            Finding(
                FindingKind.RECORD_UNMAPPABLE, f"the mapping refuses it: {bad.reason}", *where, bad.offset
            )
            for bad in refused
        ]
    stored = {offset for offset in ledger_offsets if rng.start <= offset < rng.end}
    findings = [
        Finding(
            FindingKind.DEAD_LETTER_MISSING,
            f"no dead-letter row for a refused record: {bad.reason}",
            *where,
            bad.offset,
        )
        for bad in refused
        if bad.offset not in stored
    ]
    expected = {bad.offset for bad in refused}
    findings += [
        Finding(
            FindingKind.DEAD_LETTER_EXTRA,
            "a dead-letter row for a record the mapping accepts (or absent)",
            *where,
            offset,
        )
        for offset in sorted(stored - expected)
    ]
    return findings
