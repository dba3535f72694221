"""One epoch, one JSON shape: ``Epoch.to_summary`` is what the CLI, the UI's API and page,
the XCom values and the Asset event extra carry; each adds its own fields, never its own
spelling of the common ones. The API's pydantic models are held to those shapes here."""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime
from typing import Any

from airflow_provider_eo.assets import epoch_event_extra
from airflow_provider_eo.cli import history_commands, ledger_commands
from airflow_provider_eo.ledger.model.epoch import Epoch, PartitionRange
from airflow_provider_eo.ledger.model.history import Transition
from airflow_provider_eo.ledger.model.read_model import EpochFilter, Gap, OpenEpoch
from airflow_provider_eo.ledger.model.states import EpochKind, EpochState
from airflow_provider_eo.ledger.protocol.outcomes import Committed
from airflow_provider_eo.operators.xcom import commit_summary, epoch_summary
from airflow_provider_eo.plugins import api_models, views
from airflow_provider_eo.plugins.access import EveryPipeline
from airflow_provider_eo.plugins.page import render_page

CREATED = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
WRITTEN = datetime(2026, 3, 1, 12, 0, 3, tzinfo=UTC)
COMMITTED = datetime(2026, 3, 1, 12, 0, 5, 250000, tzinfo=UTC)
VOTE = {"records": 10, "bad_records": 3, "cells_written": 14}

EPOCH = Epoch(
    epoch_id=42,
    pipeline="orders",
    kind=EpochKind.STREAM,
    state=EpochState.COMMITTED,
    fencing_token="secret-token",
    dag_id="eo_stream__orders",
    run_id="manual__1",
    created_at=CREATED,
    written_at=WRITTEN,
    committed_at=COMMITTED,
    metrics=VOTE,
    ranges=(PartitionRange("orders", 0, 100, 105), PartitionRange("orders", 1, 7, 12)),
)
SUMMARY = {
    "epoch_id": 42,
    "pipeline": "orders",
    "kind": "stream",
    "state": "COMMITTED",
    "dag_id": "eo_stream__orders",
    "run_id": "manual__1",
    "ranges": [
        {"topic": "orders", "partition": 0, "start": 100, "end": 105, "records": 5},
        {"topic": "orders", "partition": 1, "start": 7, "end": 12, "records": 5},
    ],
    "records_total": 10,
    "metrics": {"records": 10, "bad_records": 3, "cells_written": 14},
    "error": None,
    "created_at": "2026-03-01T12:00:00+00:00",
    "written_at": "2026-03-01T12:00:03+00:00",
    "committed_at": "2026-03-01T12:00:05.250000+00:00",
    "aborted_at": None,
}


def test_the_summary_has_fixed_keys_in_a_fixed_order() -> None:
    summary = EPOCH.to_summary()
    assert summary == SUMMARY
    assert list(summary) == list(SUMMARY)
    assert json.loads(json.dumps(summary)) == summary  # JSON as it is
    assert "secret-token" not in json.dumps(summary)


def test_a_reserved_backfill_epoch_has_the_same_keys() -> None:
    reserved = Epoch(
        epoch_id=7,
        pipeline="orders",
        kind=EpochKind.BACKFILL,
        state=EpochState.RESERVED,
        fencing_token="t",
        dag_id="eo_backfill__orders",
        run_id="backfill__1",
        created_at=CREATED,
        ranges=(PartitionRange("orders", 2, 40, 40),),
    )
    assert reserved.to_summary() == {
        "epoch_id": 7,
        "pipeline": "orders",
        "kind": "backfill",
        "state": "RESERVED",
        "dag_id": "eo_backfill__orders",
        "run_id": "backfill__1",
        "ranges": [{"topic": "orders", "partition": 2, "start": 40, "end": 40, "records": 0}],
        "records_total": 0,
        "metrics": None,
        "error": None,
        "created_at": "2026-03-01T12:00:00+00:00",
        "written_at": None,
        "committed_at": None,
        "aborted_at": None,
    }


def test_xcom_values_extend_the_summary() -> None:
    assert epoch_summary(EPOCH) == {**SUMMARY, "fencing_token": "secret-token"}
    committed = Committed(EPOCH, {("orders", 1): 12, ("orders", 0): 105}, "g", already_committed=False)
    assert commit_summary(committed) == {
        **SUMMARY,
        "action": "committed",
        "published": [
            {"topic": "orders", "partition": 0, "offset": 105},
            {"topic": "orders", "partition": 1, "offset": 12},
        ],
        "dead_letters": None,
    }
    noop = Committed(EPOCH, {}, None, already_committed=True)
    assert commit_summary(noop) == {**SUMMARY, "action": "noop", "published": [], "dead_letters": None}


def test_the_asset_event_extra_extends_the_summary() -> None:
    assert epoch_event_extra(EPOCH) == {**SUMMARY, "bad_records": 3}
    unvoted = dataclasses.replace(EPOCH, metrics=None)
    assert epoch_event_extra(unvoted) == {**SUMMARY, "metrics": None, "bad_records": 0}


def test_the_api_epoch_model_is_the_summary() -> None:
    assert list(api_models.Epoch.model_fields) == list(SUMMARY)
    assert list(api_models.PartitionRange.model_fields) == list(SUMMARY["ranges"][0])
    assert api_models.Epoch.model_validate(SUMMARY).model_dump(mode="json") == SUMMARY


def test_the_api_serves_the_ledgers_gap_and_open_epoch_shapes() -> None:
    gap = Gap("orders", 0, 5, 9, 41, "retention")
    open_epoch = OpenEpoch(43, EpochKind.STREAM, EpochState.RESERVED, "scheduled__1")
    assert [f.name for f in dataclasses.fields(Gap)] == list(gap.to_json())
    assert list(api_models.OpenEpoch.model_fields) == [f.name for f in dataclasses.fields(OpenEpoch)]
    pipeline = {
        "name": "orders",
        "epochs": {"RESERVED": 1, "WRITTEN": 0, "COMMITTED": 1, "ABORTED": 0},
        "open_epochs": [open_epoch.to_json()],
        "cursors": [{"topic": "orders", "partition": 0, "cursor": 9, "high_watermark": 12, "lag": 3}],
        "dead_letters": 0,
        "gaps": [gap.to_json()],
        "total_lag": 3,
        "lag_error": None,
    }
    assert api_models.Pipeline.model_validate(pipeline).model_dump(mode="json") == pipeline
    schema = api_models.Pipeline.model_json_schema()["$defs"]
    assert list(schema["Gap"]["properties"]) == list(gap.to_json())
    assert schema["Gap"]["additionalProperties"] is False  # an unexpected field is an error


VOTED = Transition(7, 42, "orders", "RESERVED", "WRITTEN", WRITTEN, "task", "d/r/write try 1", "voted")
HISTORY = [
    {
        "from": "RESERVED",
        "to": "WRITTEN",
        "at": WRITTEN.isoformat(),
        "actor_kind": "task",
        "actor": "d/r/write try 1",
        "reason": "voted",
    }
]


class _OneEpochLedger:
    """The ``Ledger`` reads the CLI and the UI views make of one epoch."""

    def history(self, epoch_id: int) -> list[Transition]:
        assert epoch_id == EPOCH.epoch_id
        return [VOTED]

    def epochs(self, wanted: Any) -> list[Epoch]:
        return [EPOCH]

    def get_epoch(self, epoch_id: int) -> Epoch:
        assert epoch_id == EPOCH.epoch_id
        return EPOCH

    def list_pipelines(self) -> list[str]:
        return [EPOCH.pipeline]


class _CommittingTools:
    def commit(self, epoch_id: int, *, pipeline: Any) -> Committed:
        return Committed(EPOCH, {("orders", 0): 105}, "g", already_committed=False)


def test_the_cli_and_the_ui_views_print_the_summary() -> None:
    ledger: Any = _OneEpochLedger()
    tools: Any = _CommittingTools()
    assert ledger_commands.epochs(ledger, EpochFilter()) == [SUMMARY]
    assert ledger_commands.commit(tools, 42, lambda name: None)["epoch"] == SUMMARY  # type: ignore[arg-type,return-value]
    assert views.epoch(ledger, 42, EveryPipeline()) == {**SUMMARY, "spec_digest": None, "history": HISTORY}
    assert history_commands.epoch(ledger, 42) == {**SUMMARY, "spec_digest": None, "history": HISTORY}
    assert views.epochs(ledger, EpochFilter(limit=50), EveryPipeline()) == [SUMMARY]


def test_the_page_shows_the_summary_total() -> None:
    page = render_page(pipeline_names=[], pipelines=[], epochs=[SUMMARY], selected=EpochFilter(limit=50))
    assert "</span></span></td><td>10</td>" in page  # the ranges' cell, then records_total


def test_the_api_epoch_detail_model_is_the_summary_and_its_history() -> None:
    detail = {**SUMMARY, "spec_digest": "ab" * 32, "history": HISTORY}
    assert list(api_models.EpochDetail.model_fields) == [*SUMMARY, "spec_digest", "history"]
    assert list(VOTED.to_json()) == ["from", "to", "at", "actor_kind", "actor", "reason"]
    assert api_models.EpochDetail.model_validate(detail).model_dump(mode="json", by_alias=True) == detail
    schema = api_models.EpochDetail.model_json_schema(by_alias=True)["$defs"]["Transition"]
    assert list(schema["properties"]) == list(VOTED.to_json())


def test_the_page_shows_each_epochs_history_under_its_row() -> None:
    page = render_page(
        pipeline_names=[],
        pipelines=[],
        epochs=[SUMMARY],
        selected=EpochFilter(limit=50),
        histories={42: HISTORY},
    )
    assert (
        '<tr class="history" id="history-42"><td></td><td colspan="10"><details>'
        "<summary>History (1)</summary>"
        '<ol class="transitions"><li class="transition" data-from="RESERVED" data-to="WRITTEN">'
        '<span class="muted nw" title="2026-03-01T12:00:03+00:00">2026-03-01 12:00:03</span> '
        '<span class="s s-RESERVED">RESERVED</span> &rarr; <span class="s s-WRITTEN">WRITTEN</span> '
        'by <span class="actor">task <code>d/r/write try 1</code></span>: '
        '<span class="reason">voted</span></li>'
        "</ol></details></td></tr>"
    ) in page
