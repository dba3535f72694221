"""Validation of a pipeline's scheduling sections: ``schedule``, ``timeouts``,
``backfill``, ``wait`` and ``audit``. Each ``parse_*`` function reads its section through
:class:`Section`, rejects unknown keys and raises ``PipelineConfigError`` on the first
problem."""

from __future__ import annotations

from airflow_provider_eo.config.section import Section
from airflow_provider_eo.config.specs import (
    DEFAULT_INDEX_BUDGET_BYTES,
    AuditSpec,
    BackfillSpec,
    TimeoutsSpec,
    WaitSpec,
)

SCHEDULE_PRESETS = ("@once", "@continuous", "@hourly", "@daily", "@weekly", "@monthly", "@quarterly",
                    "@yearly", "@annually")  # fmt: skip


def parse_timeouts(section: Section) -> TimeoutsSpec:
    """``timeouts: {write_minutes, run_minutes}``; a run must be longer than its write."""
    defaults = TimeoutsSpec()
    spec = TimeoutsSpec(
        write_minutes=section.integer("write_minutes", defaults.write_minutes),
        run_minutes=section.integer("run_minutes", defaults.run_minutes),
    )
    if spec.run_minutes <= spec.write_minutes:
        section.fail(
            "run_minutes",
            f"must be greater than write_minutes ({spec.write_minutes}): a run includes its write, "
            f"got {spec.run_minutes}",
        )
    section.finish()
    return spec


def parse_schedule(section: Section, default: str | None = None) -> str | None:
    """``schedule``: a cron expression (5 or 6 fields), a preset, or null."""
    value = section.raw("schedule", default)
    if value is None:
        return None
    if not isinstance(value, str):
        section.fail("schedule", f"must be a cron expression, a preset or null, got {value!r}")
    if value.startswith("@"):
        if value not in SCHEDULE_PRESETS:
            section.fail("schedule", f"unknown preset {value!r} (known: {', '.join(SCHEDULE_PRESETS)})")
    elif len(value.split()) not in (5, 6):
        section.fail("schedule", f"must be a cron expression with 5 fields or a preset, got {value!r}")
    else:
        _check_cron(section, value)
    return value


def parse_backfill(section: Section) -> BackfillSpec:
    """``backfill: {schedule, max_records_per_epoch, max_parallel_chunks}``; the schedule
    must give data intervals: a cron expression or a periodic preset."""
    schedule = parse_schedule(section, "@daily") or "@daily"
    if schedule in ("@once", "@continuous"):
        section.fail(
            "schedule", f"must be periodic (a cron expression or a preset with intervals), got {schedule!r}"
        )
    spec = BackfillSpec(
        schedule=schedule,
        max_records_per_epoch=section.integer("max_records_per_epoch", None),
        max_parallel_chunks=section.integer("max_parallel_chunks", 1),
    )
    section.finish()
    return spec


def _check_cron(section: Section, value: str) -> None:
    """Validate as Airflow's cron timetables do (croniter comes with Airflow; where it is
    absent, e.g. on a Spark driver, the schedule is not used and not checked further)."""
    try:
        from croniter import croniter
    except ImportError:
        return
    try:
        croniter(value)
    except ValueError as exc:
        section.fail("schedule", f"is not a valid cron expression: {exc}")


def parse_wait(pipeline: Section) -> WaitSpec:
    """``wait: {enabled, timeout_seconds, poll_seconds}`` of ``pipeline``. ``enabled``
    defaults to whether the pipeline has a ``schedule``; ``timeout_seconds`` to 3600, or
    half the time ``timeouts.run_minutes`` leaves beyond ``write_minutes`` if less. A run
    that waited its whole timeout must still have time for its write."""
    timeouts = parse_timeouts(pipeline.child("timeouts"))
    spare = 60 * (timeouts.run_minutes - timeouts.write_minutes)
    section = pipeline.child("wait")
    enabled = section.raw("enabled", pipeline.raw("schedule", None) is not None)
    if not isinstance(enabled, bool):
        section.fail("enabled", f"must be true or false, got {enabled!r}")
    spec = WaitSpec(
        enabled=enabled,
        timeout_seconds=section.integer("timeout_seconds", min(WaitSpec.timeout_seconds, spare // 2)),
        poll_seconds=section.integer("poll_seconds", WaitSpec.poll_seconds),
    )
    if spec.timeout_seconds >= spare:
        section.fail(
            "timeout_seconds",
            f"must leave time for the write: less than 60 * (timeouts.run_minutes - timeouts.write_minutes) "
            f"= {spare}, got {spec.timeout_seconds}",
        )
    if spec.poll_seconds > spec.timeout_seconds:
        limit = spec.timeout_seconds
        section.fail("poll_seconds", f"must not exceed timeout_seconds ({limit}), got {spec.poll_seconds}")
    section.finish()
    return spec


def parse_audit(section: Section) -> AuditSpec:
    """``audit: {schedule, index_budget_bytes}``: the audit DAG's schedule, a cron
    expression, a preset or null (the default: the DAG runs only when triggered), and the
    audit's index byte budget, an integer >= 1 (default 256 MiB); a ``PipelineConfigError``
    naming the pipeline and ``audit.index_budget_bytes`` otherwise."""
    budget = section.integer("index_budget_bytes", DEFAULT_INDEX_BUDGET_BYTES)
    spec = AuditSpec(schedule=parse_schedule(section), index_budget_bytes=budget)
    section.finish()
    return spec
