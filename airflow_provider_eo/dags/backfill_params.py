"""The backfill DAG's Trigger form: Params with titles, descriptions, defaults and validation."""

from __future__ import annotations

from airflow.sdk import Param

from airflow_provider_eo.config import PipelineSpec


def backfill_params(spec: PipelineSpec) -> dict[str, Param]:
    """Params of ``eo_backfill__<pipeline>``; validated by Airflow when the run is triggered.

    Exactly one of start_offset/start_time must be given; end defaults to the high watermark.
    The cross-field rules are checked again by the reserve task, which names the offending field.
    """
    topics_hint = ", ".join(spec.topics) if spec.topics else f"topics matching /{spec.topic_pattern}/"
    return {
        "topics": Param(
            [],
            type="array",
            items={"type": "string", "minLength": 1},
            title="Topics",
            description=f"Topics to backfill; empty means all of the pipeline's topics ({topics_hint}).",
        ),
        "partitions": Param(
            [],
            type="array",
            items={"type": "integer", "minimum": 0},
            title="Partitions",
            description="Partition numbers; empty means every partition of the chosen topics.",
        ),
        "start_offset": Param(
            None,
            type=["null", "integer"],
            minimum=0,
            title="Start offset",
            description="First offset to rewrite (inclusive), the same for every chosen partition.",
        ),
        "end_offset": Param(
            None,
            type=["null", "integer"],
            minimum=0,
            title="End offset",
            description="Offset to stop before (exclusive); empty means each partition's high watermark.",
        ),
        "start_time": Param(
            None,
            type=["null", "string"],
            format="date-time",
            title="Start time",
            description="Instead of a start offset: the first record at or after this time (ISO-8601).",
        ),
        "end_time": Param(
            None,
            type=["null", "string"],
            format="date-time",
            title="End time",
            description="Instead of an end offset: stop before the first record at or after this time.",
        ),
    }
