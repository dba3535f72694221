"""Typed answer of ``GET /api/pipelines/{name}/charts`` (:mod:`.chart_views`): the OpenAPI
schema of the Epochs page's chart series, field for field what the charts draw."""

from __future__ import annotations

from pydantic import Field

from airflow_provider_eo.plugins.api_models import Answer, Timestamp


class Phases(Answer):
    """Seconds per phase of an epoch (``ledger/model/phases.py``); null when it did not record it."""

    reserve: float | None = Field(description="the reservation transaction")
    wait_for_spark: float | None = Field(description="reservation to the Spark job's tasks")
    spark_tasks: float | None = Field(description="the Spark job: tasks' submission to the last result")
    wait_for_commit: float | None = Field(description="the job's end to the commit step (vote, scheduling)")
    commit: float | None = Field(description="the commit step: offsets published, COMMITTED")


class ChartEpoch(Answer):
    """One committed epoch of the window."""

    epoch_id: int
    kind: str
    committed_at: Timestamp
    records: int | None = Field(description="records read by its write (the vote's records)")
    records_per_s: float | None = Field(description="records / its Spark job's seconds, one decimal")
    dead_letters: int | None = Field(description="records its write dead-lettered (the vote's bad_records)")
    duration_s: float | None = Field(description="reservation to commit; the phases sum to it")
    phases: Phases


class SampledPartition(Answer):
    """One partition of a lag sample."""

    topic: str
    partition: int
    cursor: int = Field(description="the cursor (a commit sample: the epoch's committed end)")
    high_watermark: int
    lag: int = Field(description="max(high_watermark - cursor, 0)")


class LagSample(Answer):
    """One lag sample: its header and its shown partitions."""

    sample_id: int
    at: Timestamp
    source: str = Field(description="commit (after a stream epoch's commit) or wait (a wait poll)")
    epoch_id: int | None = Field(description="the committed epoch of a commit sample")
    total_lag: int = Field(description="the sum over all its partitions, shown or not")
    partitions: list[SampledPartition] = Field(description="the shown partitions only")


class PartitionName(Answer):
    """A topic-partition."""

    topic: str
    partition: int


class LagSeries(Answer):
    """The window's lag samples (at most 300: every k-th when there are more)."""

    samples: list[LagSample] = Field(description="oldest first")
    samples_in_window: int
    every: int = Field(description="1 when every sample is shown, else k: every k-th from the newest")
    partitions: int = Field(description="partitions of the newest sample")
    partitions_shown: list[PartitionName] = Field(
        description="at most 8: those with the largest lag in the newest sample"
    )


class Charts(Answer):
    """The Epochs page's charts of one pipeline over a window."""

    pipeline: str
    window: str = Field(description="<N>h, <N>d or <N>e (the last N epochs)")
    since: Timestamp = Field(description="the window's start (lag samples from here)")
    until: Timestamp = Field(description="the ledger's time of the read")
    epochs: list[ChartEpoch] = Field(description="the newest (at most 500) committed epochs, oldest first")
    epochs_in_window: int
    lag: LagSeries
