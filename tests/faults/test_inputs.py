"""Bad input (dead-lettered, counted, never silently dropped) and hostile backfill Params."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import psycopg2
import pytest

from airflow_provider_eo.dags.factory import backfill_dag_id
from airflow_provider_eo.hooks.kafka import EoKafkaHook
from airflow_provider_eo.operators.backfill import ReserveBackfillEpochOperator
from eo_devtools.demo.expected_state import ProducedRecord
from eo_devtools.demo.sample_events import produce_records
from tests.faults.harness import Case, FaultStack, ledger_snapshot, new_case
from tests.faults.test_process_faults import _verified
from tests.task_context import task_context

MAX_RECORD_BYTES = 2000
BAD_INPUTS: list[tuple[str, bytes | None, bytes | None]] = [
    ("malformed JSON", b"user-bad-1", b'{"clicks": 1,'),
    ("non-UTF-8", b"user-bad-2", b'{"name": "\xff\xfe"}'),
    ("oversized", b"user-bad-3", json.dumps({"blob": "x" * (MAX_RECORD_BYTES + 100)}).encode()),
    ("null key (row key field missing)", None, b'{"clicks": 7}'),
    ("JSON but not an object", b"user-bad-4", b"[1, 2, 3]"),
    ("NaN", b"user-bad-5", b'{"v": NaN}'),
    ("number out of float range", b"user-bad-6", b'{"v": 1e999}'),
]


def _oracle_view(records: list[ProducedRecord]) -> list[ProducedRecord]:
    """The oracle does not know the size limit: show it oversized records as undecodable."""
    return [
        dataclasses.replace(r, value=b"\xff oversized")
        if r.value is not None and len(r.value) > MAX_RECORD_BYTES
        else r
        for r in records
    ]


def test_bad_records_are_dead_lettered_exactly(
    fault_stack: FaultStack, tmp_path: Path, report: dict[str, Any]
) -> None:
    report.update(
        order=13, fault="bad input between good records: " + ", ".join(kind for kind, _, _ in BAD_INPUTS)
    )
    case: Case = new_case(
        fault_stack, tmp_path, "badin", records=60, cap=None, mapping={"max_record_bytes": MAX_RECORD_BYTES}
    )
    bad = produce_records(
        fault_stack.bootstrap, case.spec.topics[0], 1, iter([(k, v) for _, k, v in BAD_INPUTS])
    )
    case.produced.extend(bad)
    case.produce(60, seed=35)
    epochs = case.drain()
    verification = case.verify(_oracle_view(case.produced))
    assert verification.problems == []
    with psycopg2.connect(fault_stack.ledger_dsn) as conn, conn.cursor() as cur:
        cur.execute(
            'SELECT "partition", "offset", error, key, value FROM eo.dead_letters WHERE pipeline = %s',
            (case.name,),
        )
        rows = {
            (p, o): (err, None if k is None else bytes(k), bytes(v)) for p, o, err, k, v in cur.fetchall()
        }
    for record, (kind, key, value) in zip(bad, BAD_INPUTS, strict=True):
        err, dl_key, dl_value = rows[(record.partition, record.offset)]
        assert (dl_key, dl_value) == (key, value), kind
        assert err, kind
    report["observed"] = f"{len(rows)} dead letters (raw bytes and error kept), all at the exact offsets"
    report["recovery"] = f"none needed: {epochs} epoch(s), pipeline never stopped"
    report["verified"] = _verified(verification)


HOSTILE_PARAMS: list[dict[str, Any]] = [
    {"topics": ["x'; DROP TABLE eo.epochs; --"], "start_offset": 0},
    {"partitions": ["0 OR 1=1"], "start_offset": 0},
    {"start_offset": "0; DELETE FROM eo.epochs"},
    {"start_time": "2026-01-01'); DELETE FROM eo.epoch_ranges; --"},
    {"start_offset": 0, "end_time": "' OR ''='"},
    {"topics": ["../../etc/passwd"], "start_offset": 0},
]


@pytest.mark.parametrize("params", HOSTILE_PARAMS, ids=[str(i) for i in range(len(HOSTILE_PARAMS))])
def test_hostile_backfill_params_cannot_inject(
    fault_stack: FaultStack, tmp_path: Path, params: dict[str, Any], report: dict[str, Any]
) -> None:
    report.update(order=14, fault=f"hostile backfill Params {json.dumps(params)}")
    case = new_case(fault_stack, tmp_path, "hostile", records=20, cap=None)
    before = ledger_snapshot(fault_stack.ledger_dsn)
    op = ReserveBackfillEpochOperator(
        task_id="reserve", pipeline=case.name, pipelines_file=str(case.pipelines_file)
    )
    context: Any = {**task_context("hostile-run", backfill_dag_id(case.name)), "params": params}
    with pytest.raises(Exception) as raised:
        op.execute(context)
    message = str(raised.value)
    assert message and ("param" in message or "topic" in message or "partition" in message), message
    assert ledger_snapshot(fault_stack.ledger_dsn) == before
    report["observed"] = f"{type(raised.value).__name__}: {message[:160]}"
    report["recovery"] = "n/a"
    report["verified"] = "ledger rows and eo tables byte-identical before/after"


TEMPLATE_INPUTS: list[tuple[bytes | None, bytes | None, str | None]] = [
    (b"k1", b'{"user": "ann", "region": "eu", "clicks": 1}', None),
    (b"k2", b'{"user": "bob", "clicks": 2}', "row key field 'region' is missing or null"),
    (b"k3", b'{"user": null, "region": "us"}', "row key field 'user' is missing or null"),
    (b"k1", None, "a delete (tombstone) cannot derive its row key from the row key template"),
    (None, b'{"user": "ann", "region": "eu", "clicks": 5}', None),  # no Kafka key needed
    (b"x", b'{"user": 7, "region": "us", "n": true}', None),
]


def test_template_row_key_without_its_fields_is_dead_lettered(
    fault_stack: FaultStack, tmp_path: Path, report: dict[str, Any]
) -> None:
    report.update(
        order=13,
        fault='records without the row key fields of a "{user}:{region}" template: field missing, '
        "field null, a tombstone (no fields to key it)",
    )
    case = new_case(
        fault_stack,
        tmp_path,
        "tplkey",
        partitions=1,
        records=0,
        cap=None,
        mapping={"row_key": "{user}:{region}"},
    )
    produced = produce_records(
        fault_stack.bootstrap, case.spec.topics[0], 1, iter([(k, v) for k, v, _ in TEMPLATE_INPUTS])
    )
    case.produced.extend(produced)
    epochs = case.drain()
    hbase = fault_stack.hbase()
    try:
        rows = dict(hbase.table(case.spec.hbase_table).scan())
    finally:
        hbase.close()
    assert rows == {
        b"ann:eu": {b"d:user": b"ann", b"d:region": b"eu", b"d:clicks": b"5"},
        b"7:us": {b"d:user": b"7", b"d:region": b"us", b"d:n": b"true"},
    }
    with psycopg2.connect(fault_stack.ledger_dsn) as conn, conn.cursor() as cur:
        cur.execute(
            'SELECT "partition", "offset", error FROM eo.dead_letters WHERE pipeline = %s ORDER BY 2',
            (case.name,),
        )
        dead = cur.fetchall()
    expected = [
        (r.partition, r.offset) for r, (_, _, err) in zip(produced, TEMPLATE_INPUTS, strict=True) if err
    ]
    assert [(p, o) for p, o, _ in dead] == expected
    for (_, _, error), (_, _, want) in zip(dead, [t for t in TEMPLATE_INPUTS if t[2]], strict=True):
        assert want is not None and want in error, error
    with case.ledger() as ledger:
        assert ledger.cursors(case.name) == case.ends()
        assert ledger.open_epochs(case.name) == []
    assert EoKafkaHook().committed_offsets(case.spec.group_id, list(case.ends())) == case.ends()
    report["observed"] = f"{len(dead)} dead letters with the exact reason, at the exact offsets"
    report["recovery"] = f"none needed: {epochs} epoch(s), pipeline never stopped"
    report["verified"] = (
        f"ok: {len(produced)} records, 2 rows exact (keyed by the template), {len(dead)} dead letters, "
        "group offsets == cursor == produced ends, lag 0"
    )
