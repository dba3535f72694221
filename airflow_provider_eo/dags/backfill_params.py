"""The backfill DAG's Trigger form: Params with titles, descriptions, defaults and validation."""

from __future__ import annotations

from airflow.sdk import Param

from airflow_provider_eo.config import PipelineSpec
from airflow_provider_eo.operators.backfill_request_form import EPOCH_PARAM


def backfill_params(spec: PipelineSpec) -> dict[str, Param]:
    """Params of ``eo_backfill__<pipeline>``; validated by Airflow when the run is triggered.

    Exactly one of start_offset/start_time must be given; end defaults to the high watermark.
    The cross-field rules are checked again when the plan task reads the form
    (``operators/backfill_request_form.py``), which names the offending field.
    ``dead_letters_of_epoch`` replays that epoch's dead letters instead of a range (the
    generic filter, the run conf's ``replay_dead_letters`` that ``eo-ledger dead-letters
    replay`` sends, is no form field); the range params must then stay empty
    (``operators/backfill_request_form.py``).
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
        EPOCH_PARAM: Param(
            None,
            type=["null", "integer"],
            minimum=1,
            title="The dead letters of epoch N",
            description=(
                "Instead of a range: replay the unresolved dead letters of this committed epoch (once "
                "their cause is fixed), writing exactly those records. Leave the fields above empty."
            ),
        ),
    }
