"""The ``eo_epoch`` run facet and the lineage the write and commit operators return
(airflow_provider_eo.lineage); the provider without OpenLineage. No service: connections
come from ``AIRFLOW_CONN_*`` as Airflow resolves them."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from datetime import UTC, datetime
from pathlib import Path

import jsonschema
import pytest
import referencing
from airflow.providers.openlineage.extractors import OperatorLineage
from openlineage.client.event_v2 import InputDataset, OutputDataset
from openlineage.client.serde import Serde

import airflow_provider_eo.lineage.epoch_facet as facet_module
from airflow_provider_eo.config import parse_pipelines_text
from airflow_provider_eo.ledger.model.epoch import Epoch, PartitionRange
from airflow_provider_eo.ledger.model.states import EpochKind, EpochState
from airflow_provider_eo.lineage.epoch_facet import MAX_FACET_RANGES, SCHEMA_ID, epoch_facet
from airflow_provider_eo.lineage.operator_lineage import epoch_lineage
from airflow_provider_eo.operators.commit import CommitEpochOperator
from airflow_provider_eo.operators.write import WriteEpochOperator

REPO = Path(__file__).resolve().parents[2]
SPEC = parse_pipelines_text(
    "pipelines:\n  - name: orders\n    topics: [orders, refunds, audit]\n    hbase: {table: sales:orders}\n",
    "inline.yaml",
)["orders"]
EPOCH = Epoch(
    epoch_id=42,
    pipeline="orders",
    kind=EpochKind.STREAM,
    state=EpochState.WRITTEN,
    fencing_token="secret-token",
    dag_id="eo_stream__orders",
    run_id="manual__1",
    created_at=datetime(2026, 3, 1, 12, 0, tzinfo=UTC),
    written_at=datetime(2026, 3, 1, 12, 0, 3, tzinfo=UTC),
    metrics={"records": 9, "bad_records": 2, "skipped_offsets": 1, "cells_written": 30},
    ranges=(
        PartitionRange("audit", 0, 5, 5),  # an empty range: no input, not listed
        PartitionRange("orders", 0, 100, 105),
        PartitionRange("orders", 1, 7, 12),
    ),
)
FACET = {
    "pipeline": "orders",
    "epochId": 42,
    "kind": "stream",
    "state": "WRITTEN",
    "ranges": [
        {"topic": "orders", "partition": 0, "start": 100, "end": 105, "records": 5},
        {"topic": "orders", "partition": 1, "start": 7, "end": 12, "records": 5},
    ],
    "rangesOmitted": 0,
    "recordsTotal": 10,
    "records": 9,
    "badRecords": 2,
    "skippedOffsets": 1,
}
SCHEMA_URL = "urn:airflow-provider-eo:openlineage:EoEpochRunFacet:1-0-0#/$defs/EoEpochRunFacet"
CONNECTIONS = {
    "AIRFLOW_CONN_EO_KAFKA": json.dumps(
        {
            "conn_type": "kafka",
            "extra": {"bootstrap.servers": "SASL_SSL://b1:9093,b2:9093", "sasl.password": "pa55-w0rd"},
        }
    ),
    "AIRFLOW_CONN_EO_HBASE": json.dumps(
        {"conn_type": "eo_hbase", "host": "thrift-1", "port": 9091, "extra": {"table_prefix": "prod"}}
    ),
}


def facet_json(epoch: Epoch) -> dict[str, object]:
    return Serde.to_dict(epoch_facet(epoch))


def test_the_facet_carries_the_epoch_its_ranges_and_counts() -> None:
    assert facet_json(EPOCH) == {
        **FACET,
        "_producer": facet_json(EPOCH)["_producer"],
        "_schemaURL": SCHEMA_URL,
    }


def test_before_the_vote_the_facet_has_no_counts_of_the_write() -> None:
    reserved = Epoch(**{**EPOCH.__dict__, "state": EpochState.RESERVED, "metrics": None, "written_at": None})
    got = facet_json(reserved)
    assert {k: v for k, v in got.items() if not k.startswith("_")} == {
        k: v for k, v in FACET.items() if k not in ("records", "badRecords", "skippedOffsets")
    } | {"state": "RESERVED"}


def test_a_facet_lists_at_most_its_limit_of_ranges_and_counts_the_rest() -> None:
    ranges = tuple(PartitionRange("wide", p, 0, 3 if p % 2 else 0) for p in range(2 * MAX_FACET_RANGES + 10))
    wide = Epoch(**{**EPOCH.__dict__, "ranges": ranges})
    got = facet_json(wide)
    listed = [r for r in ranges if r.end > r.start][:MAX_FACET_RANGES]
    assert got["ranges"] == [r.to_summary() for r in listed]
    assert got["rangesOmitted"] == 5
    assert got["recordsTotal"] == 3 * (MAX_FACET_RANGES + 5)
    assert len(json.dumps(got)) < 100_000


def test_the_facet_validates_against_its_shipped_schema() -> None:
    schema = json.loads((Path(facet_module.__file__).parent / facet_module.SCHEMA_FILE).read_text())
    assert schema["$id"] == SCHEMA_ID
    assert f"{SCHEMA_ID}#/$defs/EoEpochRunFacet" == SCHEMA_URL
    # a stand-in for OpenLineage's RunFacet definition: the spec is not fetched (no network here)
    run_facet = {
        "$defs": {
            "RunFacet": {
                "type": "object",
                "properties": {"_producer": {"type": "string"}, "_schemaURL": {"type": "string"}},
                "required": ["_producer", "_schemaURL"],
            }
        }
    }
    registry = referencing.Registry().with_resources(
        [
            (
                "https://openlineage.io/spec/2-0-2/OpenLineage.json",
                referencing.jsonschema.DRAFT202012.create_resource(run_facet),
            ),
            (SCHEMA_ID, referencing.jsonschema.DRAFT202012.create_resource(schema)),
        ]
    )
    validator = jsonschema.Draft202012Validator(schema, registry=registry)
    validator.validate({"eo_epoch": facet_json(EPOCH)})
    broken = {**facet_json(EPOCH), "ranges": [{"topic": "orders", "partition": 0, "start": 1, "end": 2}]}
    assert [e.message for e in validator.iter_errors({"eo_epoch": broken})] == [
        "'records' is a required property"
    ]


def test_epoch_lineage_names_the_topics_read_and_the_table_written(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in CONNECTIONS.items():
        monkeypatch.setenv(name, value)
    lineage = epoch_lineage(EPOCH, SPEC, kafka_conn_id="eo_kafka", hbase_conn_id="eo_hbase")
    assert lineage.inputs == [InputDataset(namespace="kafka://b1:9093", name="orders")]
    assert lineage.outputs == [OutputDataset(namespace="hbase://thrift-1:9091", name="prod_sales:orders")]
    assert list(lineage.run_facets) == ["eo_epoch"]
    assert Serde.to_dict(lineage.run_facets["eo_epoch"]) == facet_json(EPOCH)
    assert lineage.job_facets == {}
    assert "pa55-w0rd" not in Serde.to_json(lineage.run_facets["eo_epoch"]) + repr(lineage.inputs)


def test_operators_that_handled_no_epoch_report_empty_lineage() -> None:
    """Before (or without) an execute that wrote or committed an epoch: no dataset, no facet,
    and no connection looked up (none is defined here)."""
    write = WriteEpochOperator(task_id="write", pipeline="orders", epoch_id=1, spec=SPEC)
    commit = CommitEpochOperator(task_id="commit", pipeline="orders", epoch_id=1, spec=SPEC)
    assert write.get_openlineage_facets_on_complete(None) == OperatorLineage()
    assert commit.get_openlineage_facets_on_complete(None) == OperatorLineage()


NO_OPENLINEAGE = textwrap.dedent(
    """
    import importlib.abc, importlib.metadata, sys
    from pathlib import Path

    import importlib_metadata

    HIDDEN = ("openlineage", "airflow.providers.openlineage")
    HIDDEN_DISTRIBUTIONS = ("apache-airflow-providers-openlineage", "openlineage-")


    class NoOpenLineage(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name in HIDDEN or name.startswith(tuple(f"{h}." for h in HIDDEN)):
                raise ModuleNotFoundError(f"No module named {name!r} (hidden by the test)")
            return None


    def without_openlineage(distributions):
        def visible(**kwargs):
            for dist in distributions(**kwargs):
                name = (dist.metadata["Name"] or "").lower().replace("_", "-")
                if not name.startswith(HIDDEN_DISTRIBUTIONS):
                    yield dist
        return visible


    sys.meta_path.insert(0, NoOpenLineage())
    for module in (importlib.metadata, importlib_metadata):  # what Airflow's provider discovery reads
        module.distributions = without_openlineage(module.distributions)
    from airflow_provider_eo.dags.factory import build_dags
    from airflow_provider_eo.lineage.operator_lineage import epoch_after_write, lineage_enabled

    dags = build_dags(default_dir=Path(sys.argv[1]))
    ops = {type(t).__name__ for d in dags.values() for t in d.tasks}
    assert {"WriteEpochOperator", "CommitEpochOperator", "WriteBackfillChunkOperator"} <= ops, ops
    assert lineage_enabled() is False
    assert epoch_after_write("no_such_connection", 1) is None  # nothing read
    assert not [m for m in sys.modules if m in HIDDEN or m.startswith(tuple(f"{h}." for h in HIDDEN))]
    print(sorted(dags))
    """
)


def test_the_provider_works_without_openlineage(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", NO_OPENLINEAGE, str(REPO / "dags")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={"AIRFLOW_HOME": str(tmp_path), "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split("\n")[-2] == str(
        [
            "eo_audit__demo_customers_cdc",
            "eo_audit__demo_events",
            "eo_audit__demo_events_session",
            "eo_audit__demo_orders_avro",
            "eo_backfill__demo_customers_cdc",
            "eo_backfill__demo_events",
            "eo_backfill__demo_events_session",
            "eo_backfill__demo_orders_avro",
            "eo_recovery",
            "eo_stream__demo_customers_cdc",
            "eo_stream__demo_events",
            "eo_stream__demo_events_session",
            "eo_stream__demo_orders_avro",
        ]
    )
