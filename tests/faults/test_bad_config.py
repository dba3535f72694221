"""Bad input and bad configuration on the real pipeline: topics deleted, recreated or
joining a pattern mid-run, unknown topics, missing/invalid connections, invalid and
hostile pipelines YAML. Never a silent loss, never a bare stack trace: every failure is
an exact error naming what and where, and the ledger is untouched by a refused step.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml
from airflow.sdk.exceptions import AirflowNotFoundException

from airflow_provider_eo.config import PipelineConfigError
from airflow_provider_eo.dags.factory import build_dags
from airflow_provider_eo.hooks.kafka import EoKafkaError
from airflow_provider_eo.ledger import CursorBeyondHighWatermark
from airflow_provider_eo.ledger.model.read_model import EpochFilter
from airflow_provider_eo.ledger.model.states import EpochKind, EpochState
from airflow_provider_eo.operators.commit import CommitEpochOperator
from airflow_provider_eo.operators.recover import RecoverEpochsOperator
from airflow_provider_eo.operators.reserve import ReserveEpochOperator
from airflow_provider_eo.spark.driver.write_epoch import ExitCode
from eo_devtools.demo.airflow_runner import AirflowRunner
from eo_devtools.demo.sample_events import produce_records, sample_events
from eo_devtools.ledger_direct import partition_pins
from eo_devtools.stack.ports import find_free_port
from tests.faults.conftest import runner_for
from tests.faults.harness import (
    KAFKA_TEST_EXTRA,
    REPO,
    Case,
    FaultStack,
    create_topic,
    delete_topic,
    kafka_conn_value,
    ledger_snapshot,
    new_case,
    new_pattern_case,
    produce_to,
)
from tests.faults.test_process_faults import _verified
from tests.task_context import task_context

TIMEOUT_S = f"{KAFKA_TEST_EXTRA['eo.timeout.ms'] / 1000:g}"  # the suite's Kafka client timeout
UNCHANGED = "ledger: every eo row and table byte-identical before/after"


def _committed(case: Case) -> list[int]:
    with case.ledger() as ledger:
        epochs = ledger.epochs(
            EpochFilter(pipeline=case.name, states=frozenset({EpochState.COMMITTED}), kind=EpochKind.STREAM)
        )
    return [e.epoch_id for e in epochs]


def _cursors(case: Case) -> dict[tuple[str, int], int]:
    with case.ledger() as ledger:
        return ledger.cursors(case.name)


def _reserve_op(case: Case, pipelines_file: Path | None = None, **conn_ids: str) -> ReserveEpochOperator:
    file = str(pipelines_file or case.pipelines_file)
    return ReserveEpochOperator(task_id="reserve", pipeline=case.name, pipelines_file=file, **conn_ids)


# -- topics ------------------------------------------------------------------------------


def test_topic_deleted_after_reserve_before_write(
    fault_stack: FaultStack, tmp_path: Path, report: dict[str, Any]
) -> None:
    report.update(order=18, fault="the pipeline's topic deleted after reserve, before the write")
    case = new_case(fault_stack, tmp_path, "tdel", records=60, cap=None)
    topic = case.spec.topics[0]
    epoch_id = int(case.reserve("tdel-run")["epoch_id"])  # type: ignore[index]
    ranges = case.epoch(epoch_id).ranges
    assert sum(r.end - r.start for r in ranges) == 60
    cursors = _cursors(case)
    assert cursors == {(topic, 0): 0, (topic, 1): 0}
    delete_topic(fault_stack, topic)

    proc = case.start_write(epoch_id)
    rc = proc.wait()
    output = proc.output()
    assert rc == ExitCode.TASK_FAILED, output[-3000:]
    failures = [
        f"pipeline={case.name} epoch_id={epoch_id}: task failed, epoch not voted: RangeReadError: "
        f"cannot read {topic} partition {r.partition} up to end offset {r.end}: reached offset {r.start} "
        f"(range [{r.start}, {r.end})): no progress for {TIMEOUT_S} s: topic {topic!r} does not exist "
        "(deleted after the reservation?)"
        for r in ranges
    ]
    assert sum(line in output for line in failures) == 1, output[-3000:]
    assert case.epoch(epoch_id).state is EpochState.RESERVED
    report["observed"] = (
        f"spark-submit exit {rc}: RangeReadError naming topic, partition, offsets and "
        f"'topic does not exist (deleted after the reservation?)'; epoch {epoch_id} RESERVED"
    )

    recovered = case.recover("tdel-next")
    assert recovered["aborted"] == [epoch_id]
    assert case.epoch(epoch_id).state is EpochState.ABORTED
    assert [(r.topic, r.partition, r.start, r.end) for r in case.epoch(epoch_id).ranges] == [
        (r.topic, r.partition, r.start, r.end) for r in ranges
    ]
    before = ledger_snapshot(fault_stack.ledger_dsn)
    with pytest.raises(EoKafkaError) as raised:
        case.reserve("tdel-next")
    assert str(raised.value) == f"pipeline {case.name!r}: topic(s) not found: {topic}"
    assert ledger_snapshot(fault_stack.ledger_dsn) == before
    assert _cursors(case) == cursors
    assert _committed(case) == []
    report["recovery"] = (
        f"direct: recover ABORTED epoch {epoch_id} (its ranges kept); next reserve refused: "
        f"{type(raised.value).__name__}: {raised.value}"
    )
    report["verified"] = (
        "nothing lost silently: cursors unchanged (0, 0), no COMMITTED epoch, refused reserve changed no row"
    )


def test_topic_deleted_and_recreated_cursor_beyond_high_watermark(
    fault_stack: FaultStack, tmp_path: Path, report: dict[str, Any]
) -> None:
    report.update(order=19, fault="topic deleted and recreated (fewer records) after an epoch was committed")
    case = new_case(fault_stack, tmp_path, "trecr", records=40, cap=None)
    topic = case.spec.topics[0]
    assert case.drain() == 1
    cursors = _cursors(case)
    assert cursors == case.ends()
    delete_topic(fault_stack, topic)
    create_topic(fault_stack, topic, 2)
    fresh = produce_records(fault_stack.bootstrap, topic, 2, sample_events(6, users=40, seed=52))
    highs = {tp: sum(1 for r in fresh if (r.topic, r.partition) == tp) for tp in cursors}
    first = min(tp for tp in cursors if cursors[tp] > highs[tp])

    before = ledger_snapshot(fault_stack.ledger_dsn)
    with pytest.raises(CursorBeyondHighWatermark) as raised:
        case.reserve("trecr-next")
    error = raised.value
    assert (error.topic, error.partition, error.cursor, error.high_watermark) == (
        first[0],
        first[1],
        cursors[first],
        highs[first],
    )
    assert str(error) == (
        f"cursor of {topic}[{first[1]}] is {cursors[first]} but its high watermark is {highs[first]}: "
        "the topic was probably deleted and recreated; the ledger will not guess where to resume"
    )
    assert ledger_snapshot(fault_stack.ledger_dsn) == before
    assert case.recover("trecr-next") == {
        "pipeline": case.name,
        "kind": "stream",
        "recommitted": [],
        "aborted": [],
        "kept": [],
    }
    report["observed"] = f"reserve: CursorBeyondHighWatermark: {error}"
    report["recovery"] = "none automatic by design (the operator decides where to resume); recover no-op"
    report["verified"] = f"{UNCHANGED}; cursors {sorted(cursors.values())} kept"


def test_new_topics_matching_the_pattern_join_mid_run(
    fault_stack: FaultStack, tmp_path: Path, report: dict[str, Any]
) -> None:
    report.update(
        order=20,
        fault="pipeline declared with topic_pattern '<prefix>-.*': a new matching topic (and a "
        "non-matching decoy '<x><prefix>-c') created between epochs",
    )
    case, prefix = new_pattern_case(fault_stack, tmp_path, "rx", partitions=2)
    first, joined, decoy = f"{prefix}-a", f"{prefix}-b", f"x{prefix}-c"
    produce_to(case, first, 50, seed=41, partitions=2)
    e1 = case.run_epoch("rx-1")
    assert e1 is not None
    assert {r.topic for r in case.epoch(e1).ranges} == {first}
    ends_1 = case.ends()

    create_topic(fault_stack, joined, 1)
    create_topic(fault_stack, decoy, 1)
    produce_to(case, joined, 30, seed=42, partitions=1)
    produce_records(fault_stack.bootstrap, decoy, 1, sample_events(10, users=5, seed=43))
    produce_to(case, first, 10, seed=44, partitions=2)
    e2 = case.run_epoch("rx-2")
    assert e2 is not None
    ranges = {(r.topic, r.partition): (r.start, r.end) for r in case.epoch(e2).ranges}
    ends = case.ends()
    assert ranges == {
        (first, 0): (ends_1[(first, 0)], ends[(first, 0)]),
        (first, 1): (ends_1[(first, 1)], ends[(first, 1)]),
        (joined, 0): (0, 30),
    }
    with case.ledger() as ledger:
        pins = partition_pins(ledger, case.name)
    assert pins == {(first, 0): (0, "earliest"), (first, 1): (0, "earliest"), (joined, 0): (0, "earliest")}
    report["observed"] = (
        f"epoch {e1}: {first} only; epoch {e2}: {joined}[0] from offset 0 (pinned earliest) + {first}; "
        "the decoy never reserved"
    )
    assert case.drain() == 0
    verification = case.verify()
    assert verification.problems == []
    report["recovery"] = "none needed: the next stream epoch picked the new topic up"
    report["verified"] = _verified(verification) + f", over {first} and {joined}"


def test_unknown_topic_in_the_pipeline(
    fault_stack: FaultStack, tmp_path: Path, report: dict[str, Any]
) -> None:
    report.update(
        order=21, fault="a pipeline lists a topic that does not exist; a topic_pattern that matches nothing"
    )
    case = new_case(fault_stack, tmp_path, "unk", records=10, cap=None)
    missing = f"eo-fault-missing-{uuid.uuid4().hex[:6]}"
    document = yaml.safe_load(case.pipelines_file.read_text())
    document["pipelines"][0]["topics"].append(missing)
    bad_file = tmp_path / "unknown-topic.yaml"
    bad_file.write_text(yaml.safe_dump(document))
    message = f"pipeline {case.name!r}: topic(s) not found: {missing}"

    before = ledger_snapshot(fault_stack.ledger_dsn)
    with pytest.raises(EoKafkaError) as raised:
        _reserve_op(case, bad_file).execute(task_context("unk-run", case.dag_id))  # type: ignore[arg-type]
    assert str(raised.value) == message
    step = Case(case.stack, case.spec, bad_file, tmp_path).step("reserve", "unk-step")
    assert step.returncode == 1, step.output[-3000:]
    assert f"EoKafkaError: {message}" in step.output
    assert ledger_snapshot(fault_stack.ledger_dsn) == before

    nothing = copy.deepcopy(document)
    entry = nothing["pipelines"][0]
    del entry["topics"]
    entry["topic_pattern"] = f"{missing}-.*"
    pattern_file = tmp_path / "pattern-matches-nothing.yaml"
    pattern_file.write_text(yaml.safe_dump(nothing))
    assert Case(case.stack, case.spec, pattern_file, tmp_path).reserve("unk-pattern") is None
    with case.ledger() as ledger:
        assert ledger.epochs(EpochFilter(pipeline=case.name)) == []
        assert partition_pins(ledger, case.name) == {}
    report["observed"] = (
        f"reserve exit 1, {type(raised.value).__name__}: {message}; pattern: skipped, no epoch"
    )
    report["recovery"] = "n/a (fix the pipeline declaration)"
    report["verified"] = f"{UNCHANGED}; no epoch, no pin for the pipeline"


# -- connections ---------------------------------------------------------------------------

SECRET = f"pw-{uuid.uuid4().hex}"


def _ledger_uri(dsn: str, *, password: str, port: int | None = None) -> str:
    parts = urlsplit(dsn)
    return f"postgresql://{parts.username}:{password}@{parts.hostname}:{port or parts.port}{parts.path}"


@pytest.mark.parametrize("which", ["ledger", "kafka"])
def test_connection_id_not_defined(
    fault_stack: FaultStack, tmp_path: Path, which: str, report: dict[str, Any]
) -> None:
    conn_id = f"eo_{which}_undefined"
    report.update(order=22, fault=f"{which} connection id {conn_id!r} not defined anywhere")
    case = new_case(fault_stack, tmp_path, "noconn", records=10, cap=None)
    before = ledger_snapshot(fault_stack.ledger_dsn)
    with pytest.raises(AirflowNotFoundException) as raised:
        _reserve_op(case, **{f"{which}_conn_id": conn_id}).execute(task_context("noconn", case.dag_id))  # type: ignore[arg-type]
    assert str(raised.value) == f"The conn_id `{conn_id}` isn't defined"
    assert ledger_snapshot(fault_stack.ledger_dsn) == before
    report["observed"] = f"reserve: {type(raised.value).__name__}: {raised.value}"
    report["recovery"] = "n/a (define the connection)"
    report["verified"] = f"{UNCHANGED}; no epoch"


def _invalid_connections(stack: FaultStack) -> dict[str, tuple[str, str, str]]:
    """id -> (env var, value holding SECRET, the exact error line the step must print)."""
    pg_port = urlsplit(stack.ledger_dsn).port
    closed = find_free_port()
    refused = f'connection to server at "127.0.0.1", port {closed} failed: Connection refused'
    bad_password = (
        f'connection to server at "127.0.0.1", port {pg_port} failed: '
        'FATAL:  password authentication failed for user "eo"'
    )
    unavailable = (
        "LedgerUnavailable: epoch ledger unavailable at 127.0.0.1:{port}/eo of connection 'eo_ledger' "
        "(nothing was changed): "
    )
    sasl = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.username": "eo"}
    return {
        "kafka-without-bootstrap": (
            "AIRFLOW_CONN_EO_KAFKA",
            json.dumps({"conn_type": "kafka", "extra": {**sasl, "sasl.password": SECRET}}),
            "ValueError: Kafka connection 'eo_kafka': set 'bootstrap.servers' in extra (or host/port)",
        ),
        "kafka-closed-port": (
            "AIRFLOW_CONN_EO_KAFKA",
            kafka_conn_value(f"127.0.0.1:{closed}", {**sasl, "sasl.password": SECRET}),
            "EoKafkaError: pipeline {name!r}: Kafka connection 'eo_kafka': cannot list topics: KafkaError{{",
        ),
        "ledger-closed-port": (
            "AIRFLOW_CONN_EO_LEDGER",
            _ledger_uri(stack.ledger_dsn, password=SECRET, port=closed),
            unavailable.format(port=closed) + refused,
        ),
        "ledger-wrong-password": (
            "AIRFLOW_CONN_EO_LEDGER",
            _ledger_uri(stack.ledger_dsn, password=SECRET),
            unavailable.format(port=pg_port) + bad_password,
        ),
    }


INVALID_CONNECTIONS = [
    "kafka-without-bootstrap",
    "kafka-closed-port",
    "ledger-closed-port",
    "ledger-wrong-password",
]


@pytest.mark.parametrize("which", INVALID_CONNECTIONS)
def test_invalid_connection_is_named_and_its_secret_never_shown(
    fault_stack: FaultStack, tmp_path: Path, which: str, report: dict[str, Any]
) -> None:
    env_var, value, expected = _invalid_connections(fault_stack)[which]
    report.update(order=22, fault=f"invalid connection ({which}) in {env_var}, its password set")
    case = new_case(fault_stack, tmp_path, "badconn", records=10, cap=None)
    expected = expected.format(name=case.name)
    before = ledger_snapshot(fault_stack.ledger_dsn)
    step = case.start_step("reserve", "badconn", extra_env={env_var: value}).result()
    assert step.returncode == 1, step.output[-3000:]
    assert expected in step.output, step.output[-3000:]
    assert SECRET not in step.output
    assert ledger_snapshot(fault_stack.ledger_dsn) == before
    observed = f"reserve exit 1: {expected.split(': ', 1)[0]} naming the conn id, password absent from output"
    if which == "ledger-wrong-password":  # the Spark application resolves the same connection
        epoch_id = int(case.reserve("badconn-write")["epoch_id"])  # type: ignore[index]
        before = ledger_snapshot(fault_stack.ledger_dsn)
        proc = case.start_write(epoch_id, **{env_var: value})
        rc = proc.wait()
        output = proc.output()
        assert rc == ExitCode.FAILED, output[-3000:]
        assert (
            f"pipeline={case.name} epoch_id={epoch_id}: write failed, epoch not voted: {expected}" in output
        )
        assert SECRET not in output
        assert ledger_snapshot(fault_stack.ledger_dsn) == before
        assert case.epoch(epoch_id).state is EpochState.RESERVED
        observed += f"; spark-submit exit {rc}, same message, epoch {epoch_id} left RESERVED"
    report["observed"] = observed
    report["recovery"] = "n/a (fix the connection)"
    report["verified"] = f"{UNCHANGED}; exact error line: {expected}"


# -- the pipelines YAML ----------------------------------------------------------------------


def test_invalid_yaml_value_mid_run(fault_stack: FaultStack, tmp_path: Path, report: dict[str, Any]) -> None:
    report.update(
        order=23,
        fault="pipelines file edited to an invalid value (caps.max_records_total: 0) after reserve: "
        "write, commit, recover and reserve all read it",
    )
    case = new_case(fault_stack, tmp_path, "badyaml", records=40, cap=None)
    epoch_id = int(case.reserve("badyaml-run")["epoch_id"])  # type: ignore[index]
    good = case.pipelines_file.read_text()
    document = yaml.safe_load(good)
    document["pipelines"][0]["caps"] = {"max_records_total": 0}
    case.pipelines_file.write_text(yaml.safe_dump(document))
    message = (
        f"{case.pipelines_file}: pipeline {case.name!r}: field 'caps.max_records_total': "
        "must be an integer >= 1, got 0"
    )
    before = ledger_snapshot(fault_stack.ledger_dsn)

    proc = case.start_write(epoch_id)
    rc = proc.wait()
    assert rc == ExitCode.INVALID, proc.output()[-3000:]
    assert f"pipeline={case.name} epoch_id={epoch_id}: cannot write: {message}" in proc.output()
    common = {"pipeline": case.name, "pipelines_file": str(case.pipelines_file)}
    operators = [
        CommitEpochOperator(task_id="commit", epoch_id=epoch_id, **common),
        RecoverEpochsOperator(task_id="recover", **common),
        ReserveEpochOperator(task_id="reserve", **common),
    ]
    for op in operators:
        with pytest.raises(PipelineConfigError) as raised:
            op.execute(task_context("badyaml-next", case.dag_id))  # type: ignore[arg-type]
        assert str(raised.value) == message, type(op).__name__
    assert ledger_snapshot(fault_stack.ledger_dsn) == before
    assert case.epoch(epoch_id).state is EpochState.RESERVED
    shown = message.replace(str(case.pipelines_file), "<file>")
    report["observed"] = (
        f"write exit {rc}, commit/recover/reserve PipelineConfigError: {shown}; epoch {epoch_id} RESERVED"
    )

    case.pipelines_file.write_text(good)
    assert case.drain() == 1
    assert case.epoch(epoch_id).state is EpochState.ABORTED
    verification = case.verify()
    assert verification.problems == []
    report["recovery"] = f"direct: file fixed; recover ABORTED epoch {epoch_id}; 1 epoch drained"
    report["verified"] = _verified(verification) + "; nothing changed while the file was invalid"


def test_invalid_yaml_in_the_dag_folder_is_a_clear_import_error(
    fault_stack: FaultStack, airflow: AirflowRunner, tmp_path: Path, report: dict[str, Any]
) -> None:
    report.update(
        order=23,
        fault="EO_PIPELINES_FILE names a file whose 2nd pipeline has schedule '99 99 * * *' "
        "(real Airflow parses the repo's dags/)",
    )
    bad_file = tmp_path / "pipelines.yaml"
    pipelines = [
        {"name": "fine", "topics": ["fine"], "hbase": {"table": "fine"}},
        {"name": "nightly", "topics": ["nightly"], "hbase": {"table": "nightly"}, "schedule": "99 99 * * *"},
    ]
    bad_file.write_text(yaml.safe_dump({"pipelines": pipelines}))
    message = (
        f"{bad_file}: pipeline 'nightly': field 'schedule': is not a valid cron expression: "
        "[99 99 * * *] is not acceptable, out of range"
    )
    with pytest.raises(PipelineConfigError) as raised:
        build_dags(bad_file)
    assert str(raised.value) == message

    runner = runner_for(airflow, fault_stack, bad_file)
    result = subprocess.run(
        [sys.executable, "-m", "airflow", "dags", "list-import-errors", "--local", "-o", "json"],
        env=runner.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=300,
    )
    listed = [line for line in result.stdout.splitlines() if line.startswith("[")]
    assert result.returncode == 1 and len(listed) == 1, result.stdout[-3000:]
    errors = json.loads(listed[0])
    assert [e["filepath"] for e in errors] == [str(REPO / "dags" / "eo_pipelines.py")]
    last_line = errors[0]["error"].strip().splitlines()[-1]
    assert last_line == f"airflow_provider_eo.config.config_errors.PipelineConfigError: {message}"
    shown = message.replace(str(bad_file), "<file>")
    report["observed"] = f"airflow dags list-import-errors (exit 1): dags/eo_pipelines.py: {shown}"
    report["recovery"] = "n/a (fix the file; nothing ran)"
    report["verified"] = "import error names file, pipeline and field; build_dags raises the same"


HOSTILE_YAML: list[tuple[str, str, Any, str]] = [
    # (id, dotted field, value, the problem the message must state)
    ("name-sql", "name", "x'; DROP TABLE eo.epochs; --", "must match ^[A-Za-z0-9_][A-Za-z0-9_.-]*$"),
    ("name-newline", "name", "orders\n", "must match ^[A-Za-z0-9_][A-Za-z0-9_.-]*$"),
    ("name-long", "name", "p" * 300, "must be at most 200 characters (it is part of DAG ids), got 300"),
    ("topic-sql", "topics", ["x'; DROP TABLE eo.epochs; --"], "must be a Kafka topic name"),
    ("topic-traversal", "topics", ["../../etc/passwd"], "must be a Kafka topic name"),
    ("topic-long", "topics", ["t" * 300], "must be a Kafka topic name"),
    ("table-sql", "hbase.table", "x'; DROP TABLE eo.epochs; --", "must be an HBase table name"),
    ("table-traversal", "hbase.table", "../../etc", "must be an HBase table name"),
    ("family-traversal", "hbase.column_family", "../../etc", "must be an HBase column family name"),
    ("group-newline", "group_id", "g\n2026-01-01 [error] forged", "must not contain control characters"),
    ("batch-size-huge", "batch_size", 10**30, "must be an integer <= 1000000"),
    ("schedule-sql", "schedule", "0 0 * * 1;DROP", "is not a valid cron expression"),
]


def _field_path(dotted: str) -> str:
    return {"name": "pipelines[0].name", "topics": "topics[0]"}.get(dotted, dotted)


@pytest.mark.parametrize(
    ("dotted", "value", "problem"), [h[1:] for h in HOSTILE_YAML], ids=[h[0] for h in HOSTILE_YAML]
)
def test_hostile_yaml_value_is_rejected_naming_the_field(
    fault_stack: FaultStack, tmp_path: Path, dotted: str, value: Any, problem: str, report: dict[str, Any]
) -> None:
    shown = repr(value) if len(repr(value)) < 60 else f"{repr(value)[:20]}... ({len(repr(value))} chars)"
    report.update(order=24, fault=f"hostile pipelines YAML: {dotted} = {shown}")
    name = f"hostile_{uuid.uuid4().hex[:6]}"
    entry: dict[str, Any] = {"name": name, "topics": ["eo-fault-hostile"], "hbase": {"table": name}}
    *parents, leaf = dotted.split(".")
    node = entry
    for parent in parents:
        node = node[parent]
    node[leaf] = value
    file = tmp_path / "pipelines.yaml"
    file.write_text(yaml.safe_dump({"pipelines": [entry]}))
    pipeline = None if dotted == "name" else name

    before = ledger_snapshot(fault_stack.ledger_dsn)
    op = ReserveEpochOperator(task_id="reserve", pipeline=name, pipelines_file=str(file))
    with pytest.raises(PipelineConfigError) as raised:
        op.execute(task_context("hostile", f"eo_stream__{name}"))  # type: ignore[arg-type]
    error = raised.value
    assert (error.file, error.pipeline, error.field) == (str(file), pipeline, _field_path(dotted))
    assert error.problem.startswith(problem), error.problem
    assert "\n" not in str(error)  # a value cannot forge log lines
    with pytest.raises(PipelineConfigError) as parsed:
        build_dags(file)
    assert str(parsed.value) == str(error)
    assert ledger_snapshot(fault_stack.ledger_dsn) == before
    report["observed"] = (
        f"reserve and the DAG file: PipelineConfigError: {str(error)[len(str(file)) + 2 :][:200]}"
    )
    report["recovery"] = "n/a"
    report["verified"] = UNCHANGED


HOSTILE_GROUP = "g'; DROP TABLE eo.epochs; -- ü " + "x" * 1000
HOSTILE_FAMILY = "d'; DROP TABLE eo.epochs; --"


def test_hostile_but_legal_values_are_handled_safely(
    fault_stack: FaultStack, tmp_path: Path, report: dict[str, Any]
) -> None:
    report.update(
        order=25,
        fault=f"legal but hostile values: group_id {HOSTILE_GROUP[:31]!r}+1000 chars, "
        f"column_family {HOSTILE_FAMILY!r}",
    )
    table = f"t_legal_{uuid.uuid4().hex[:6]}"
    case = new_case(
        fault_stack,
        tmp_path,
        "legal",
        records=40,
        cap=None,
        group_id=HOSTILE_GROUP,
        hbase={"table": table, "column_family": HOSTILE_FAMILY},
    )
    assert (case.spec.group_id, case.spec.column_family) == (HOSTILE_GROUP, HOSTILE_FAMILY)
    hbase = fault_stack.hbase()
    try:
        hbase.delete_table(table, disable=True)
        hbase.create_table(table, {HOSTILE_FAMILY: {}})
    finally:
        hbase.close()
    others = ledger_snapshot(fault_stack.ledger_dsn, exclude_pipeline=case.name)

    epochs = case.drain()
    assert epochs == 1
    verification = case.verify()  # HBase cells in the hostile family, offsets of the hostile group
    assert verification.problems == []
    assert verification.hbase_cells > 0
    assert ledger_snapshot(fault_stack.ledger_dsn, exclude_pipeline=case.name) == others
    report["observed"] = f"{epochs} epoch reserved, written and committed as for any value"
    report["recovery"] = "none needed"
    report["verified"] = (
        _verified(verification) + "; group offsets under the hostile group id; other pipelines' "
        "ledger rows and the eo tables byte-identical"
    )
