"""The issue's performance targets, checked against a report (never in a timed test).

Each :class:`Target` reads one figure of the report by its dotted key path and
compares it with a bound. A figure that is missing (its section did not run) is
reported as ``not measured``, never as met.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Target:
    """``figure <op> bound`` for the figure at ``key`` (dots separate levels); ``profile``
    is the key of the report's part that says what bounds the figure."""

    key: str
    op: str
    bound: float
    what: str
    profile: str

    def figure(self, report: Mapping[str, Any]) -> float | None:
        """The figure, or None when the report does not have it."""
        node = _at(report, self.key)
        return float(node) if isinstance(node, int | float) else None

    def check(self, report: Mapping[str, Any]) -> dict[str, Any]:
        """``{"target", "key", "figure", "bound", "met"}``; ``met`` is None when not measured.
        A target not met adds ``profile``: the report's part at :attr:`profile`."""
        value = self.figure(report)
        met = None if value is None else OPERATORS[self.op](value, self.bound)
        result: dict[str, Any] = {
            "target": self.what,
            "key": self.key,
            "figure": value,
            "bound": f"{self.op} {self.bound:g}",
            "met": met,
        }
        if met is False:
            result["profile"] = {self.profile: _at(report, self.profile)}
        return result


def _at(report: Mapping[str, Any], key: str) -> Any:
    """The report's value at the dotted ``key``, or None."""
    node: Any = report
    for part in key.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node


OPERATORS: dict[str, Callable[[float, float], bool]] = {
    ">=": operator.ge,
    "<=": operator.le,
    "<": operator.lt,
}

_WRITE, _RESERVE = "write.cpu", "reserve_commit_detail"
TARGETS = (
    Target(
        "partition_spread.ratio_400_vs_8",
        "<=",
        1.3,
        "Spark tasks' time over 400 partitions <= 1.3x over 8 (20,000 records of 100 bytes)",
        "partition_spread.runs",
    ),
    Target(
        "partition_spread.session_ratio_400_vs_8",
        "<=",
        1.3,
        "session mode: Spark tasks' time over 400 partitions <= 1.3x over 8 (20,000 records of 100 bytes)",
        "partition_spread.session_runs",
    ),
    Target(
        "session_write.ratio",
        ">=",
        0.95,
        "write step in session mode >= 0.95x submit mode (the write dataset, median of 3 each)",
        "session_write.runs",
    ),
    Target(
        "session_fleet.epochs_ratio",
        ">=",
        3.0,
        "20 pipelines x 8 partitions: epochs/minute through one Connect server >= 3x through spark-submit",
        "session_fleet.modes",
    ),
    Target(
        "session_fleet.memory_ratio",
        "<=",
        0.5,
        "20 pipelines x 8 partitions: peak RSS of all Spark processes, session <= 0.5x submit",
        "session_fleet.modes",
    ),
    Target("write.ratio_vs_loop", ">=", 1.0, "write step >= 1.0x the hand-written loop", _WRITE),
    Target("write.ratio_vs_bound", ">=", 0.7, "write step >= 0.7x min(read-only, write-only bound)", _WRITE),
    Target(
        "avro.ratio_vs_json", ">=", 0.9, "write step on Avro >= 0.9x on the same records in JSON", "avro.cpu"
    ),
    Target(
        "cdc.ratio_vs_plain",
        ">=",
        0.9,
        "write step on Debezium Avro >= 0.9x the same rows in plain Avro",
        "cdc.cpu",
    ),
    Target(
        "audit.ratio_spark_records_per_s",
        ">=",
        0.8,
        "audit (the DAG's Spark job) >= 0.8x the write step's records/s",
        "audit",
    ),
    Target(
        "audit.ratio_spark_peak_rss",
        "<=",
        1.2,
        "audit (the DAG's Spark job) peak RSS <= 1.2x the write step's",
        "audit",
    ),
    Target(
        "audit.ratio_records_per_s",
        ">=",
        0.8,
        "eo-ledger audit (in-process) >= 0.8x the write step's records/s",
        "audit",
    ),
    Target(
        "audit.ratio_peak_rss",
        "<=",
        1.2,
        "eo-ledger audit (in-process) peak RSS <= 1.2x the write step's",
        "audit",
    ),
    Target("reserve_commit_ms.100", "<", 100, "reserve + commit < 100 ms at 100 partitions", _RESERVE),
    Target("reserve_commit_ms.10000", "<", 3000, "reserve + commit < 3 s at 10,000 partitions", _RESERVE),
    Target(
        "reserve_commit_history_ratio",
        "<=",
        1.2,
        "reserve + commit flat in epoch history (100k epochs)",
        "history",
    ),
    Target(
        "many_pipelines.reserve_commit_ms.p99",
        "<",
        500,
        "reserve + commit p99 < 500 ms: 100 pipelines x 64 partitions from 8 processes",
        "many_pipelines.lock_waits",
    ),
    *(
        Target(
            f"spark_native.ratio_vs_{peer}.{records}",
            ">=",
            2.0,
            f"write step >= 2x Spark's Kafka source ({what}) at {records:,} records",
            f"spark_native.sizes.{records}.cpu",
        )
        for peer, what in (
            ("batch", "spark.read, one offset range"),
            ("available_now", "Trigger.AvailableNow"),
        )
        for records in (500_000, 1_000_000)
    ),
    Target(
        "epoch_overhead_s",
        "<=",
        5,
        "one-epoch fixed overhead <= 5 s with the default settings",
        "epoch_overhead_parts.summary",
    ),
    *(
        Target(
            f"freshness.session.measured.{key}_s",
            "<=",
            bound,
            f"freshness {key} <= {bound:g} s: @continuous in session mode, 1,000 records/s for 5 minutes",
            "freshness.session",
        )
        for key, bound in (("p50", 5.0), ("p99", 10.0))
    ),
    Target(
        "epoch_overhead_session_s",
        "<=",
        2.5,
        "one-epoch fixed overhead in session mode (spark.mode: session) <= 2.5 s",
        "epoch_overhead_session_parts.summary",
    ),
    Target("memory_ratio_10m_1m", "<=", 1.2, "write-step peak memory at 10M <= 1.2x at 1M", "memory"),
    Target(
        "big_records.rss_ratio_900k_vs_small",
        "<=",
        1.5,
        "write-step peak memory with 900 KB records <= 1.5x with 300 B records",
        "big_records.runs",
    ),
)


def check_targets(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every target checked against ``report``."""
    return [target.check(report) for target in TARGETS]
