"""The table Asset: canonical URIs, the registered ``hbase`` URI handler, the event extra."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from airflow.sdk import Asset, AssetAlias

from airflow_provider_eo.assets import asset_for, epoch_event_extra, recommits_alias, table_uri
from airflow_provider_eo.config.specs import PipelineSpec
from airflow_provider_eo.dags.factory import build_backfill_dag, build_recovery_dag, build_stream_dag
from airflow_provider_eo.ledger.model.epoch import Epoch, PartitionRange
from airflow_provider_eo.ledger.model.states import EpochKind, EpochState


def spec(table: str) -> PipelineSpec:
    return PipelineSpec(
        name="orders",
        topics=("orders",),
        topic_pattern=None,
        group_id="g",
        hbase_table=table,
        column_family="d",
    )


@pytest.mark.parametrize(
    ("table", "uri"),
    [
        ("orders", "hbase://eo_hbase/default/orders"),
        ("default:orders", "hbase://eo_hbase/default/orders"),
        ("sales:orders.v2-x", "hbase://eo_hbase/sales/orders.v2-x"),
    ],
)
def test_asset_for_names_the_table_behind_the_connection(table: str, uri: str) -> None:
    asset = asset_for(spec(table))
    assert (asset.name, asset.uri) == (uri, uri)
    assert asset == Asset(uri)  # a hand-written canonical URI is the same asset
    assert asset_for(spec(table), "hbase_prod").uri == uri.replace("eo_hbase", "hbase_prod")


@pytest.mark.parametrize(
    ("written", "canonical"),
    [
        ("hbase://eo_hbase/orders", "hbase://eo_hbase/default/orders"),
        ("HBASE://eo_hbase/sales:orders", "hbase://eo_hbase/sales/orders"),
        ("hbase://eo_hbase/sales/orders/#frag", "hbase://eo_hbase/sales/orders"),
    ],
)
def test_the_registered_handler_normalizes_hbase_uris(written: str, canonical: str) -> None:
    assert Asset(written).uri == canonical


@pytest.mark.parametrize(
    ("uri", "message"),
    [
        ("hbase://hbase-host:9090/orders", "the authority must be a connection id, got 'hbase-host:9090'"),
        ("hbase://user@eo_hbase/orders", "the authority must be a connection id, got 'user@eo_hbase'"),
        ("hbase://eo_hbase/orders?x=1", "takes no query, got 'x=1'"),
        ("hbase://eo_hbase/", "path must be /<namespace>/<table>, got '/'"),
        ("hbase://eo_hbase/a/b/c", "path must be /<namespace>/<table>, got '/a/b/c'"),
        ("hbase:///default/orders", "not a connection id: ''"),
        ("hbase://eo_hbase/de-fault/orders", "not an HBase table: de-fault:orders"),
    ],
)
def test_the_registered_handler_refuses_uris_that_name_no_table(uri: str, message: str) -> None:
    with pytest.raises(ValueError, match="hbase asset URI") as caught:
        Asset(uri)
    assert message in str(caught.value)


def test_table_uri_refuses_an_illegal_connection_id() -> None:
    with pytest.raises(ValueError, match="not a connection id: 'a/b'"):
        table_uri("orders", "a/b")


def test_recommits_alias_is_named_after_the_asset() -> None:
    assert recommits_alias(asset_for(spec("orders"))) == AssetAlias(
        "eo-recommits:hbase://eo_hbase/default/orders"
    )


def test_event_extra_is_the_epoch_summary() -> None:
    created = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
    committed = datetime(2026, 3, 1, 12, 0, 5, 250000, tzinfo=UTC)
    epoch = Epoch(
        epoch_id=42,
        pipeline="orders",
        kind=EpochKind.STREAM,
        state=EpochState.COMMITTED,
        fencing_token="secret-token",
        dag_id="eo_stream__orders",
        run_id="manual__1",
        created_at=created,
        committed_at=committed,
        metrics={"records": 10, "bad_records": 3},
        ranges=(PartitionRange("orders", 0, 100, 105), PartitionRange("orders", 1, 7, 12)),
    )
    assert epoch_event_extra(epoch) == {
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
        "metrics": {"records": 10, "bad_records": 3},
        "error": None,
        "created_at": "2026-03-01T12:00:00+00:00",
        "written_at": None,
        "committed_at": "2026-03-01T12:00:05.250000+00:00",
        "aborted_at": None,
        "bad_records": 3,
    }


def test_the_factory_declares_the_table_asset_on_committing_tasks_only() -> None:
    pipeline = spec("sales:orders")
    asset = asset_for(pipeline)
    alias = recommits_alias(asset)
    outlets = {
        (dag.dag_id, task.task_id.rpartition(".")[2]): task.outlets  # backfill: inside a task group
        for dag in (
            build_stream_dag(pipeline, "p.yaml"),
            build_backfill_dag(pipeline, "p.yaml"),
            build_recovery_dag([pipeline], "p.yaml"),
        )
        for task in dag.tasks
        if task.outlets
    }
    assert outlets == {
        ("eo_stream__orders", "recover"): [alias],
        ("eo_stream__orders", "commit"): [asset],
        ("eo_backfill__orders", "commit"): [asset],
        ("eo_backfill__orders", "release"): [alias],
        ("eo_recovery", "recover__orders"): [alias],
    }
