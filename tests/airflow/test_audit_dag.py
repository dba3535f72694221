"""``eo_audit__<pipeline>`` through real Airflow (``airflow dags test``), spark-submit,
Kafka, HBase and the ledger.

Stream epochs written in-process over two partitions (updates, a tombstone, a dead letter;
``batch_size`` 2, at most 3 offsets per partition and epoch). The audit DAG's Spark job
stores a ``clean`` audit under its run with exact counts, equal (JSON, findings included)
to ``eo-ledger audit``'s in-process report of the same window; after a cell is put by hand
at its version with other bytes, the DAG's verdict task fails and the stored audit names
exactly that cell, audited in buckets under the index byte budget chosen in the form.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import happybase
import pytest

from airflow_provider_eo.cli.eo_ledger import main
from airflow_provider_eo.dag_ids import audit_dag_id
from airflow_provider_eo.ledger import Ledger
from airflow_provider_eo.ledger.model.epoch import Epoch
from airflow_provider_eo.operators.audit import AuditWindowRefused, resolve_window
from tests.airflow.conftest import PipelineFactory, PipelineUnderTest
from tests.conftest import StackInfo
from tests.integration.epoch_round_trip import EpochRoundTrip
from tests.kafka_helpers import produce

pytestmark = pytest.mark.airflow

PARTITION_0: list[tuple[bytes, bytes | None]] = [
    (b"k1", b'{"a":"1"}'),
    (b"k2", b'{"a":"2"}'),
    (b"k1", b'{"a":"3","b":"x"}'),  # an update
    (b"k3", b"not json"),  # a dead letter
    (b"k2", None),  # a tombstone
]
PARTITION_1: list[tuple[bytes, bytes | None]] = [
    (b"k4", b'{"a":"4"}'),
    (b"k5", b'{"a":"5"}'),
    (b"k4", b'{"a":"6"}'),
    (b"k6", b'{"a":"7"}'),
]


@dataclass(frozen=True)
class Written:
    pipe: PipelineUnderTest
    epochs: list[Epoch]


@pytest.fixture(scope="module")
def written(stack: StackInfo, pipeline_factory: PipelineFactory) -> Iterator[Written]:
    pipe = pipeline_factory(
        partitions=2, batch_size=2, bad_records="dead_letter", caps={"max_records_per_partition": 3}
    )
    produce(stack.kafka_bootstrap, pipe.topic, PARTITION_0, partition=0)
    produce(stack.kafka_bootstrap, pipe.topic, PARTITION_1, partition=1)
    trip = EpochRoundTrip(pipe.spec, stack.ledger_dsn, stack.conn_env)
    epochs = [trip.run_stream_epoch() for _ in range(3)]
    assert epochs[-1] is None
    yield Written(pipe, [e for e in epochs if e is not None])


def stored_audit(ledger: Ledger, dag_id: str, run_id: str) -> Any:
    record = ledger.audit_of_run(f"{dag_id}/{run_id}")
    assert record is not None
    return record


def in_process(
    stack: StackInfo, written: Written, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> dict[str, Any]:
    """``eo-ledger audit`` of the same window, in this process: its JSON answer."""
    for name, value in stack.conn_env.items():
        monkeypatch.setenv(name, value)
    first, last = written.epochs[0].epoch_id, written.epochs[-1].epoch_id
    capsys.readouterr()
    main([
        "--dsn", stack.ledger_dsn, "audit", "--pipelines-file", str(written.pipe.file),
        "--pipeline", written.pipe.spec.name, "--epochs", f"{first}-{last}",
    ])  # fmt: skip
    return json.loads(capsys.readouterr().out)


def test_a_clean_window_is_stored_clean_and_equals_the_in_process_audit(
    stack: StackInfo,
    written: Written,
    ledger: Ledger,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    dag_id = audit_dag_id(written.pipe.spec.name)
    outcome = written.pipe.runner.run(dag_id)  # the form's default: the last 10 committed epochs
    assert outcome.state == "success", outcome.log[-6000:]
    record = stored_audit(ledger, dag_id, outcome.run_id)
    ids = tuple(e.epoch_id for e in written.epochs)
    assert (record.source, record.verdict, record.findings_total, record.epoch_ids) == (
        "dag",
        "clean",
        0,
        ids,
    )
    assert record.summary["offsets"] == {
        "ranges": 4, "offsets": 9, "records_written": 8, "dead_letters": 1, "skipped_offsets": 0,
    }  # fmt: skip
    # 8 expected cells (segments of 2: k1,k2 | k1 (a, b) | k4,k5 | k4 | k6): k2's is covered by
    # its tombstone's family delete, the 7 others are at their versions (k1's and k4's older
    # versions too: the family keeps them)
    assert record.summary["cells"] == {
        "verified": 7, "covered_by_newer": 1, "deletes_verified": 1, "later_data": 0,
    }  # fmt: skip
    assert record.findings == ()

    spark = {**record.summary, "epoch_ids": list(ids), "findings": list(record.findings)}
    local = in_process(stack, written, monkeypatch, capsys)
    # HBase calls aside: each Spark task asks the table's families once (4 ranges, 4 tasks),
    # the process once for the window
    assert spark.pop("hbase_calls") == local.pop("hbase_calls") + spark["offsets"]["ranges"] - 1
    assert local.pop("audit_id") != record.audit_id  # the CLI keeps its own audit (source cli)
    assert spark == local


def test_a_corrupted_cell_fails_the_verdict_and_is_the_one_finding(
    stack: StackInfo, written: Written, ledger: Ledger, hbase: happybase.Connection
) -> None:
    table = hbase.table(written.pipe.spec.hbase_table)
    (version,) = [ts for _value, ts in table.cells(b"k6", b"d:a", include_timestamp=True)]
    table.put(b"k6", {b"d:a": b"CORRUPT"}, timestamp=version)  # other bytes at the same version
    first, last = written.epochs[0].epoch_id, written.epochs[-1].epoch_id
    dag_id = audit_dag_id(written.pipe.spec.name)
    # the form's index budget: half the bytes the clean run's index took (its default budget)
    (clean,) = [a for a in ledger.audits(written.pipe.spec.name) if a.source == "dag"]
    assert clean.summary["index"]["budget_bytes"] == 256 << 20  # the pipeline's default
    budget = clean.summary["index"]["peak_bytes"] // 2
    conf = {"epochs": f"{first}-{last}", "index_budget_bytes": budget}
    outcome = written.pipe.runner.run(dag_id, conf=conf)
    assert outcome.state == "failed", outcome.log[-6000:]
    record = stored_audit(ledger, dag_id, outcome.run_id)
    index = record.summary["index"]  # the budget reached the Spark job: its rows went in buckets
    assert index["budget_bytes"] == budget  # (9 offsets: at 9 buckets a pass is not cut further)
    assert index["buckets"] > 1 and index["passes"] > index["buckets"]
    assert f"audit {record.audit_id} of pipeline" in outcome.log
    assert "discrepancies: 8 records written, 1 dead letters, 1 findings" in outcome.log
    assert (record.verdict, record.findings_total) == ("discrepancies", 1)
    assert record.summary["findings_by_kind"] == {"cell_bytes_differ": 1}
    (finding,) = record.findings
    assert {k: finding[k] for k in ("kind", "topic", "partition", "row", "column", "expected_version")} == {
        "kind": "cell_bytes_differ", "topic": written.pipe.topic, "partition": 1, "row": "k6",
        "column": "d:a", "expected_version": version,
    }  # fmt: skip
    assert (finding["expected_bytes"], finding["hbase_holds"]) == ("7", f"'CORRUPT' at version {version}")


def test_the_window_is_resolved_or_refused_by_name(written: Written, ledger: Ledger) -> None:
    name = written.pipe.spec.name
    ids = [e.epoch_id for e in written.epochs]
    assert [e.epoch_id for e in resolve_window(ledger, name, epochs=None, since=None, last=1)] == ids[-1:]
    since = written.epochs[-1].committed_at
    assert since is not None
    resolved = resolve_window(ledger, name, epochs=None, since=since.isoformat(), last=None)
    assert [e.epoch_id for e in resolved] == ids[-1:]
    refusals = {
        (f"{ids[-1] + 100}-{ids[-1] + 200}", None, None): (
            f"pipeline {name!r} has no committed epoch with an id in {ids[-1] + 100}-{ids[-1] + 200}"
        ),
        (
            None,
            "2999-01-01T00:00:00+00:00",
            None,
        ): f"pipeline {name!r} has no committed epoch committed since 2999",
        ("1-2", None, 3): f"pipeline {name!r}: choose one of epochs, since, last; got ['epochs', 'last']",
        ("2-1", None, None): "epochs 2-1: the first id is above the last",
        (None, "yesterday", None): "since must be an ISO time",
    }
    for (epochs, since_text, last), message in refusals.items():
        with pytest.raises(AuditWindowRefused) as refused:
            resolve_window(ledger, name, epochs=epochs, since=since_text, last=last)
        assert str(refused.value).startswith(message)
