"""The audit's answer: counts per category, the verdict and the kept findings (no I/O).

Contract of :class:`AuditReport`: ``verdict`` is ``clean`` when no finding was counted,
else ``discrepancies``; ranges retention deleted are listed under ``not_auditable`` with
their vote's counts and never change the verdict. :meth:`AuditReport.to_json` is what
``eo-ledger audit`` prints; :meth:`AuditReport.text` the same for people.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from airflow_provider_eo.audit.cell_check import CellTally
from airflow_provider_eo.audit.findings import FindingLog


@dataclass
class OffsetTally:
    """Offsets of the audited ranges by fate."""

    ranges: int = 0
    offsets: int = 0
    records_written: int = 0
    dead_letters: int = 0
    skipped_offsets: int = 0


@dataclass
class AuditReport:
    """One audit's result (see the module contract)."""

    pipeline: str
    epoch_ids: list[int]
    offsets: OffsetTally = field(default_factory=OffsetTally)
    cells: CellTally = field(default_factory=CellTally)
    findings: FindingLog = field(default_factory=FindingLog)
    not_auditable: list[dict[str, Any]] = field(default_factory=list)
    hbase_calls: int = 0
    #: ``{letters, published, seen}`` of the dead-letter topic check (empty: no topic).
    dead_letter_topic: dict[str, int] = field(default_factory=dict)
    #: ``{budget_bytes, buckets, passes, peak_bytes}`` of the window index (:mod:`.window_passes`).
    index: dict[str, int] = field(default_factory=dict)

    @property
    def verdict(self) -> str:
        """``clean`` or ``discrepancies``."""
        return "clean" if self.findings.total == 0 else "discrepancies"

    def to_json(self) -> dict[str, Any]:
        """The JSON answer of ``eo-ledger audit``."""
        return {
            "pipeline": self.pipeline,
            "window": {
                "first_epoch": min(self.epoch_ids, default=None),
                "last_epoch": max(self.epoch_ids, default=None),
                "epochs": len(self.epoch_ids),
            },
            "epoch_ids": sorted(self.epoch_ids),
            "verdict": self.verdict,
            "offsets": vars(self.offsets),
            "cells": vars(self.cells),
            "not_auditable": self.not_auditable,
            "dead_letter_topic": self.dead_letter_topic,
            "findings_by_kind": {kind.value: n for kind, n in sorted(self.findings.counts.items())},
            "findings_total": self.findings.total,
            "findings_not_shown": self.findings.dropped,
            "findings": [finding.to_json() for finding in self.findings.kept],
            "hbase_calls": self.hbase_calls,
            "index": self.index,
        }

    def text(self) -> str:
        """The report for people: the window, the counts, the verdict, one line per finding."""
        o, c = self.offsets, self.cells
        lines = [
            f"audit of pipeline {self.pipeline}: epochs {min(self.epoch_ids, default='-')}.."
            f"{max(self.epoch_ids, default='-')} ({len(self.epoch_ids)} committed)",
            f"offsets: {o.offsets} in {o.ranges} ranges: {o.records_written} written, "
            f"{o.dead_letters} dead letters, {o.skipped_offsets} skipped",
            f"cells: {c.verified} verified, {c.covered_by_newer} covered by newer versions, "
            f"{c.deletes_verified} deletes verified, {c.later_data} cells of later data",
            *(f"not auditable (retention): {item}" for item in self.not_auditable),
            *([f"dead-letter topic: {self.dead_letter_topic}"] if self.dead_letter_topic else []),
            f"verdict: {self.verdict} ({self.findings.total} findings)",
            *(finding.text() for finding in self.findings.kept),
        ]
        if self.findings.dropped:
            lines.append(f"... and {self.findings.dropped} more findings (counted above)")
        return "\n".join(lines)
