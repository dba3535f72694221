"""Security: the TLS and SASL settings of the Kafka connection reach librdkafka in reserve, write
(the Spark executors' range readers) and commit alike; secrets never reach a command line, the
``airflow dags test`` output (the task logs), AIRFLOW_HOME/logs or Airflow's metadata DB.

The module starts a private Apache Kafka (``tests/faults/secure_kafka.py``: the devstack's
``KafkaService`` with the broker's own ``SSL`` and ``SASL_SSL`` listeners, a PEM keystore
signed by a throwaway CA, ``sasl.enabled.mechanisms=SCRAM-SHA-512``, the SCRAM user created
with the AdminClient over PLAINTEXT) and the pipeline's ``eo_kafka`` connection points at its
SASL_SSL listener: every pipeline connection is real librdkafka TLS + SASL against Kafka's own
authenticator (``security.protocol=SASL_SSL``, ``ssl.ca.location`` = the test CA,
``sasl.mechanism=SCRAM-SHA-512``). The test's own admin and producers use the TLS-only
listener, so what the broker logs about SASL_SSL connections is the pipeline's. PostgreSQL
and HBase are the session's ``fault_stack``.

One module-scoped scenario drives one pipeline: every step (reserve, the spark-submit write,
commit) first with a broken setting (negative controls: an unrelated CA, plaintext, a wrong
password: the step fails with the TLS/SASL error and changes nothing), then with the right
ones, then real ``airflow dags test`` stream runs finish it (recovery re-commits the manual
epoch, a new epoch follows). A /proc scanner watches every command line meanwhile. The
three tests assert on what the scenario observed.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import pytest

from airflow_provider_eo.hooks.kafka import EoKafkaHook
from airflow_provider_eo.ledger import EpochState
from airflow_provider_eo.ledger.model.read_model import EpochFilter
from airflow_provider_eo.spark.driver.write_epoch import ExitCode
from eo_devtools.demo.airflow_runner import AirflowRunner, DagRunOutcome
from eo_devtools.demo.verification import Verification
from eo_devtools.stack.pki import Pki, make_pki
from tests.conftest import new_stack_dir
from tests.faults.harness import Case, FaultStack, WriteProc, restore_env, set_env
from tests.faults.secure_kafka import (
    SecureStack,
    kafka_conn_json,
    new_secure_case,
    produce,
    random_password,
    secure_kafka,
    stderr_of_this_process,
)
from tests.process_scan import CommandLineScanner

CERT_FAILED = "SSL routines::certificate verify failed"
SASL_FAILED = (
    "SASL authentication error: Authentication failed during authentication due to invalid "
    "credentials with SASL mechanism SCRAM-SHA-512"
)
# why the broker refused a SASL_SSL connection (its log): the TLS handshake, or the login
BROKER_TLS_REFUSED = "SSL handshake failed"
BROKER_SASL_REFUSED = SASL_FAILED.removeprefix("SASL authentication error: ")
# the negative controls fail by their TLS/SASL error at once; a short call timeout ends them sooner
FAIL_FAST = {"eo.timeout.ms": "2000"}
TP = tuple[str, int]
WRONG = ("wrong CA", "plaintext", "wrong password")


# -- helpers -------------------------------------------------------------------------------


@contextlib.contextmanager
def kafka_conn(value: str) -> Iterator[None]:
    """``eo_kafka`` of this process (the in-process operators) set to ``value`` for the block."""
    previous = set_env({"AIRFLOW_CONN_EO_KAFKA": value})
    try:
        yield
    finally:
        restore_env(previous)


@dataclass(frozen=True)
class Failure:
    """A step run with a broken setting: its error (or exit status) and its output / librdkafka log."""

    error: str
    log: str


def fails_in_process(step: Callable[[], object], conn: str) -> Failure:
    """Run ``step()`` with ``eo_kafka`` = ``conn``; it must raise."""
    with kafka_conn(conn), stderr_of_this_process() as stderr:
        try:
            step()
        except Exception as exc:
            return Failure(f"{type(exc).__name__}: {exc}", stderr())
    raise AssertionError(f"the step succeeded with a broken Kafka connection: {conn}")


def airflow_env(stack: SecureStack) -> dict[str, str]:
    """The stack's connections, and this interpreter's ``spark-submit`` first on PATH (what the
    ``spark_default`` connection runs), as when the venv is activated."""
    path = os.pathsep.join(p for p in (str(Path(sys.executable).parent), os.environ.get("PATH", "")) if p)
    return {**stack.conn_env, "PATH": path}


def task_sections(output: str) -> dict[str, str]:
    """task id -> the lines ``airflow dags test`` printed between the task's start and end."""
    sections: dict[str, list[str]] = {}
    current: str | None = None
    for line in output.splitlines():
        if "[DAG TEST] starting task_id=" in line:
            current = line.split("task_id=", 1)[1].split()[0]
            sections.setdefault(current, [])
        elif "[DAG TEST] end task task_id=" in line:
            current = None
        elif current is not None:
            sections[current].append(line)
    return {task: "\n".join(lines) for task, lines in sections.items()}


def excerpt(text: str, *needles: str) -> str:
    """The first line holding every needle, from the first needle on ('' when none)."""
    line = next((line for line in text.splitlines() if all(n in line for n in needles)), "")
    return line[line.find(needles[0]) :].strip()[:160] if line else ""


# -- the scenario --------------------------------------------------------------------------


@dataclass
class Scenario:
    """What the SASL_SSL pipeline went through (see the module docstring)."""

    stack: SecureStack
    case: Case
    secrets: list[str]
    reserve: dict[str, Failure] = field(default_factory=dict)
    write: dict[str, Failure] = field(default_factory=dict)
    commit: dict[str, Failure] = field(default_factory=dict)
    epochs_after_bad_reserve: int = -1
    first_epoch: int = 0
    after_bad_writes: tuple[EpochState, int] | None = None  # epoch state, HBase rows
    write_logins: int = 0  # SASL_SSL connections (TLS + SCRAM) the broker accepted during the good write
    logins: int = 0  # ... during the whole scenario
    rejections: list[str] = field(default_factory=list)  # the broker's reason for each refused one
    after_bad_commits: tuple[EpochState, dict[TP, int | None]] | None = None
    runs: list[DagRunOutcome] = field(default_factory=list)
    epochs: dict[int, EpochState] = field(default_factory=dict)
    group: dict[TP, int | None] = field(default_factory=dict)
    verification: Verification | None = None
    scanner: CommandLineScanner | None = None
    airflow_home: Path = Path()


def _finish_bad_write(proc: WriteProc) -> Failure:
    rc = proc.wait()
    return Failure(f"exit {rc}", proc.output())


@pytest.fixture(scope="module")
def scenario(
    fault_stack: FaultStack, airflow: AirflowRunner, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Scenario]:
    pki: Pki = make_pki(tmp_path_factory.mktemp("pki"))
    password = random_password()
    state_dir = new_stack_dir("eo-secure-kafka-")
    try:
        with secure_kafka(state_dir, pki, "eo-writer", password) as kafka:
            since = kafka.sasl_log.mark()
            stack = SecureStack(fault_stack, kafka)
            ledger_password = unquote(urlsplit(fault_stack.ledger_dsn).password or "")
            assert ledger_password and password
            secrets = [password, ledger_password, fault_stack.ledger_dsn, *stack.conn_env.values()]
            case = new_secure_case(stack, tmp_path_factory.mktemp("secure"), "sec", records=100, seed=71)
            s = Scenario(stack, case, secrets, airflow_home=airflow.home)
            with CommandLineScanner(secrets, watch=case.name) as s.scanner:
                _drive(s, pki, airflow)
            with case.ledger() as ledger:
                s.epochs = {e.epoch_id: e.state for e in ledger.epochs(EpochFilter(pipeline=case.name))}
            with kafka_conn(stack.conn_env["AIRFLOW_CONN_EO_KAFKA"]):
                s.verification = case.verify()
                s.group = EoKafkaHook().committed_offsets(case.spec.group_id, sorted(case.ends()))
            broker = kafka.sasl_log.authentications(since)
            s.logins, s.rejections = broker.succeeded, broker.failed
            yield s
    finally:
        shutil.rmtree(state_dir, ignore_errors=True)


def _drive(s: Scenario, pki: Pki, airflow: AirflowRunner) -> None:
    case, stack = s.case, s.stack
    config = stack.kafka.client_config
    good = stack.conn_env["AIRFLOW_CONN_EO_KAFKA"]
    broken = {
        "wrong CA": kafka_conn_json(config, {**FAIL_FAST, "ssl.ca.location": str(pki.other_ca)}),
        "plaintext": kafka_conn_json(
            config, {**FAIL_FAST, "security.protocol": None, "ssl.ca.location": None, "sasl.mechanism": None}
        ),
        "wrong password": kafka_conn_json(config, {**FAIL_FAST, "sasl.password": random_password()}),
    }
    run_id = f"sec-{uuid.uuid4().hex[:8]}"
    # reserve
    for what in WRONG:
        s.reserve[what] = fails_in_process(lambda: case.reserve(run_id), broken[what])
    with case.ledger() as ledger:
        s.epochs_after_bad_reserve = len(ledger.epochs(EpochFilter(pipeline=case.name)))
    with kafka_conn(good):
        summary = case.reserve(run_id)
    assert summary is not None and summary["records_total"] == len(case.produced), summary
    s.first_epoch = epoch_id = int(summary["epoch_id"])
    # write: both broken writes at once (they only fail), then the right one
    bad = {
        what: case.start_write(epoch_id, AIRFLOW_CONN_EO_KAFKA=broken[what])
        for what in ("wrong CA", "wrong password")
    }
    s.write = {what: _finish_bad_write(proc) for what, proc in bad.items()}
    s.after_bad_writes = (case.epoch(epoch_id).state, case.hbase_row_count())
    before_write = stack.kafka.sasl_log.mark()
    write = case.start_write(epoch_id)
    assert write.wait() == 0, write.output()[-3000:]
    s.write_logins = stack.kafka.sasl_log.authentications(before_write).succeeded
    # commit
    for what in ("wrong CA", "wrong password"):
        s.commit[what] = fails_in_process(lambda: case.commit(epoch_id, run_id), broken[what])
    with kafka_conn(good):
        group = EoKafkaHook().committed_offsets(case.spec.group_id, sorted(case.ends()))
    s.after_bad_commits = (case.epoch(epoch_id).state, group)
    # more data; real Airflow recovers (re-commits the WRITTEN epoch) and runs a new epoch
    case.produced.extend(produce(stack.kafka.tls_config, case.spec.topics[0], case.partitions, 60, seed=72))
    runner = AirflowRunner(airflow.home, airflow_env(stack), pipelines_file=case.pipelines_file)
    s.runs = case.drain_airflow(runner)
    for n, run in enumerate(s.runs):  # next to the step logs, for a failure's diagnosis
        (case.workdir / f"airflow-run-{n + 1}.log").write_text(run.log)


# -- the tests -----------------------------------------------------------------------------


def _exact_end_state(s: Scenario) -> None:
    assert s.verification is not None and s.verification.problems == []
    assert s.group == s.case.ends()
    assert len(s.epochs) >= 2 and set(s.epochs.values()) == {EpochState.COMMITTED}


def test_tls_settings_reach_reserve_write_and_commit(scenario: Scenario, report: dict[str, Any]) -> None:
    report.update(
        order=26,
        fault="Kafka only over TLS (SASL_SSL, ssl.ca.location = a test CA): each step first with "
        "ssl.ca.location of an unrelated CA; reserve also in plaintext",
    )
    s = scenario
    for step, failures in (("reserve", s.reserve), ("write", s.write), ("commit", s.commit)):
        assert CERT_FAILED in failures["wrong CA"].log, (step, failures["wrong CA"].log[-2000:])
    assert "cannot list topics" in s.reserve["wrong CA"].error, s.reserve["wrong CA"].error
    plaintext = s.reserve["plaintext"]
    refused = excerpt(plaintext.log, "Disconnected", "in state APIVERSION_QUERY")  # TLS port, no TLS
    assert refused, plaintext.log[-2000:]
    assert "cannot list topics" in plaintext.error, plaintext.error
    assert s.epochs_after_bad_reserve == 0
    assert s.write["wrong CA"].error == f"exit {ExitCode.TASK_FAILED}"
    assert s.after_bad_writes == (EpochState.RESERVED, 0)  # not voted, nothing in HBase
    commit_error = s.commit["wrong CA"].error
    assert f"commit to group {s.case.spec.group_id!r}" in commit_error, commit_error
    assert s.after_bad_commits is not None
    state, group = s.after_bad_commits
    assert state == EpochState.WRITTEN and set(group.values()) == {None}
    assert BROKER_TLS_REFUSED in s.rejections  # the broker saw the TLS handshakes fail
    assert s.write_logins >= 2  # the executors' range readers connected through TLS
    _exact_end_state(s)
    report["observed"] = (
        f"wrong CA: reserve, write (exit 4) and commit each failed with "
        f"`{excerpt(s.reserve['wrong CA'].log, 'SSL handshake failed', CERT_FAILED)}`; plaintext: "
        f"`{refused}`; no epoch, epoch {s.first_epoch} stayed "
        f"RESERVED (HBase empty) then WRITTEN (no group offsets)"
    )
    report["recovery"] = (
        f"right CA: reserve, spark-submit write ({s.write_logins} SASL_SSL connections), then "
        f"{len(s.runs)} `airflow dags test` stream run(s): recover re-committed epoch {s.first_epoch}"
    )
    report["verified"] = (
        f"{len(s.epochs)} epochs COMMITTED, group offsets == produced ends, verify_pipeline: no "
        f"problem ({s.verification.hbase_rows if s.verification else 0} rows)"
    )


def test_sasl_credentials_reach_reserve_write_and_commit(scenario: Scenario, report: dict[str, Any]) -> None:
    report.update(
        order=27,
        fault="Kafka only over SASL_SSL with SCRAM-SHA-512: each step first with a wrong "
        "sasl.password; a /proc scanner watches every command line for the secrets",
    )
    s = scenario
    for step, failures in (("reserve", s.reserve), ("write", s.write), ("commit", s.commit)):
        assert SASL_FAILED in failures["wrong password"].log, (step, failures["wrong password"].log[-2000:])
    assert "cannot list topics" in s.reserve["wrong password"].error
    assert s.write["wrong password"].error == f"exit {ExitCode.TASK_FAILED}"
    assert f"commit to group {s.case.spec.group_id!r}" in s.commit["wrong password"].error
    # the broker refused logins for the wrong password only (and TLS handshakes of the wrong CA
    # and plaintext controls); nothing else
    assert BROKER_SASL_REFUSED in s.rejections
    assert set(s.rejections) == {BROKER_SASL_REFUSED, BROKER_TLS_REFUSED}, sorted(set(s.rejections))
    assert s.write_logins >= 2  # the executors' range readers logged in
    _exact_end_state(s)
    # no secret on any command line while all of this ran (spark-submit and Airflow included)
    assert s.scanner is not None
    assert s.scanner.leaks == []
    assert s.scanner.watched, "the scanner never saw a process of the pipeline"
    report["observed"] = (
        f"wrong password: reserve, write (exit 4) and commit each failed with `{SASL_FAILED}`, "
        f"nothing changed; the broker refused {s.rejections.count(BROKER_SASL_REFUSED)} SCRAM "
        f"logins and {s.rejections.count(BROKER_TLS_REFUSED)} TLS handshakes, nothing else; no secret "
        f"in any command line ({s.scanner.scans} /proc scans, {len(s.scanner.watched)} processes of "
        f"the pipeline seen)"
    )
    report["recovery"] = (
        f"right password: {s.logins} SCRAM logins "
        f"({s.write_logins} by the write), {len(s.runs)} `airflow dags test` run(s)"
    )
    report["verified"] = "epochs COMMITTED, group offsets == produced ends, verify_pipeline: no problem"


def test_secrets_never_reach_airflow_output_logs_or_metadata(
    scenario: Scenario, report: dict[str, Any]
) -> None:
    report.update(
        order=28,
        fault="secrets in play: ledger password and DSN, every AIRFLOW_CONN_* value, the SASL password; "
        "searched in the whole `airflow dags test` output (the task logs, spark-submit's output "
        "included), every file under AIRFLOW_HOME/logs and Airflow's metadata DB file",
    )
    s = scenario
    files = sorted(p for p in (s.airflow_home / "logs").rglob("*") if p.is_file())
    texts = {f"log file {p.relative_to(s.airflow_home)}": p.read_bytes() for p in files}
    texts.update({f"airflow dags test run {i + 1}": run.log.encode() for i, run in enumerate(s.runs)})
    databases = sorted(s.airflow_home.glob("airflow.db*"))
    assert databases, sorted(p.name for p in s.airflow_home.iterdir())
    texts.update({f"metadata DB {p.name}": p.read_bytes() for p in databases})
    found = [
        f"{where}: secret #{n}"
        for where, data in texts.items()
        for n, secret in enumerate(s.secrets)
        if secret.encode() in data
    ]
    assert found == []
    # the scan looked at real task logs: `dags test` runs each task in process and prints its log
    # to the output (AIRFLOW_HOME/logs gets no task log); every task of the run logged there
    sections = task_sections(s.runs[0].log)
    assert set(sections) == {"recover", "reserve", "write", "commit"}, sorted(sections)
    assert all(text.strip() for text in sections.values())
    later = sorted(e for e in s.epochs if e != s.first_epoch)
    assert f"epoch_id={s.first_epoch}" in sections["recover"]  # re-committed by recovery
    for task in ("reserve", "write", "commit"):
        assert f"epoch_id={later[0]}" in sections[task], task
    assert "voted WRITTEN" in sections["write"]  # spark-submit's own output is part of the task log
    report["observed"] = (
        f"{len(s.secrets)} secret strings searched in {len(s.runs)} `dags test` output(s) (task logs of "
        f"recover, reserve, write with spark-submit's output, commit; naming epochs {s.first_epoch} and "
        f"{later[0]}), {len(files)} file(s) under AIRFLOW_HOME/logs and {len(databases)} metadata DB "
        f"file(s): none found"
    )
    report["recovery"] = "n/a"
    report["verified"] = (
        "no secret in any Airflow output, log file or the metadata DB; task logs name the epochs"
    )
