"""Drive the real pipeline step by step and inject faults (see docs/faults.md).

A :class:`FaultStack` is the suite's own local stack (PostgreSQL, Apache Kafka, the HBase
master JVM and HBase's Thrift server, in a temp dir), so kills, restarts and stalls never
disturb other suites. A :class:`Case` is one pipeline (own topic, group, HBase table) with
produced sample records; its methods run the protocol's steps — in this process
(operators' ``execute``), in a child process (``tests.faults.steps``, so a fault point may
SIGKILL it), the Spark application through ``spark-submit`` (local[2]) — and verify the
end state with :func:`eo_devtools.demo.verification.verify_pipeline`.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import happybase
import yaml
from airflow.sdk.exceptions import AirflowSkipException
from confluent_kafka import Consumer, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from airflow_provider_eo.config import PipelineSpec, load_pipelines
from airflow_provider_eo.dags.factory import stream_dag_id
from airflow_provider_eo.hooks.kafka import EoKafkaHook
from airflow_provider_eo.ledger import Ledger
from airflow_provider_eo.ledger.model.epoch import Epoch
from airflow_provider_eo.ledger.model.read_model import EpochFilter
from airflow_provider_eo.ledger.model.states import EpochState
from airflow_provider_eo.operators.commit import CommitEpochOperator
from airflow_provider_eo.operators.recover import RecoverEpochsOperator
from airflow_provider_eo.operators.reserve import ReserveEpochOperator
from airflow_provider_eo.spark.driver import application as app_module
from eo_devtools.demo.airflow_runner import AirflowRunner, DagRunOutcome
from eo_devtools.demo.expected_state import ProducedRecord
from eo_devtools.demo.sample_events import big_sample_events, produce_records, sample_events
from eo_devtools.demo.verification import Verification, verify_pipeline
from eo_devtools.stack.hbase_admin import HBaseTableTool
from eo_devtools.stack.ports import PortBusyError
from eo_devtools.stack.process import running_pid, stop_process_group
from eo_devtools.stack.stack import LocalStack, service_classes
from eo_devtools.stack.topology import Topology
from tests.faults.crash_points import FAULT_HANG_ENV, FAULT_RELEASE_ENV, crash_env
from tests.integration.dead_letter_support import (
    DEAD_LETTER_PARTITIONS,
    TopicRecord,
    by_key_partition,
    read_committed,
)
from tests.kafka_helpers import consume_range
from tests.spark_startup import SPARK_SUBMIT, spark_conf, spark_conf_args, start_driver_archive
from tests.task_context import task_context

REPO = Path(__file__).resolve().parents[2]
# Short client timeouts so a stalled broker fails a step within seconds, not minutes.
KAFKA_TEST_EXTRA = {
    "eo.timeout.ms": 4000,
    "socket.timeout.ms": 4000,
    "socket.connection.setup.timeout.ms": 4000,
}
SIGKILLED = -signal.SIGKILL
#: How long a restarted service may take to serve clients again (HBase replays its WAL).
READY_TIMEOUT_S = 180.0
OFFSETS_TOPIC = "__consumer_offsets"
#: The state dir of a running stack the suite uses instead of its own (:func:`running_fault_stack`).
FAULT_STACK_DIR_ENV = "EO_FAULT_STACK_DIR"
TASK_HANGING_RE = re.compile(r"EO fault point spark\.task\.after_segment: hanging \(pid (\d+)\)")


def kafka_conn_value(bootstrap: str, more: Mapping[str, object] | None = None) -> str:
    """The suite's Kafka connection: the stack's broker with short client timeouts (+ ``more``)."""
    extra = {"bootstrap.servers": bootstrap, **KAFKA_TEST_EXTRA, **(more or {})}
    return json.dumps({"conn_type": "kafka", "extra": extra})


class FaultStack:
    """The suite's private local stack, with the service-level faults.

    Service names are the stack's (:data:`eo_devtools.stack.stack.SERVICES`):
    ``postgres``, ``kafka`` (the broker JVM), ``hbase`` (the HMaster JVM: master, region
    server and ZooKeeper) and ``hbase-thrift`` (the Thrift1 server JVM), and the further
    instances of ``topology`` (``kafka-2``, ``kafka-3``: nodes of a Kafka cluster, whose
    faults are in :mod:`tests.faults.kafka_brokers`). A restart waits
    for real readiness (:meth:`wait_ready`), not only for an open port; every restart's
    duration is appended to ``restarts`` (service, seconds).
    """

    def __init__(self, state_dir: Path, topology: Topology | None = None) -> None:
        self.state_dir = state_dir
        self.local = LocalStack(state_dir)
        self.topology = topology  # None: the stack's default (one of each)
        self.restarts: list[tuple[str, float]] = []

    def up(self) -> None:
        """Start every service that is not running and wait until each answers and Kafka's
        group coordinators serve (a new cluster creates its offsets topic on first use)."""
        self.local.up(topology=self.topology)
        self.wait_ready("kafka")
        self.conn_env = {**self.local.conn_env(), "AIRFLOW_CONN_EO_KAFKA": kafka_conn_value(self.bootstrap)}

    def down(self) -> None:
        self.local.down()

    @property
    def bootstrap(self) -> str:
        return self.local.kafka_bootstrap

    @property
    def ledger_dsn(self) -> str:
        return self.local.ledger_dsn

    def hbase(self, timeout_ms: int | None = None) -> happybase.Connection:
        """A happybase connection to the Thrift server (``timeout_ms``: socket timeout)."""
        return happybase.Connection(self.local.hbase_host, self.local.hbase_port, timeout=timeout_ms)

    def pid(self, service: str) -> int:
        """Pid (= process group) of a running ``service``; AssertionError when it is not running."""
        services = tuple(service_classes(self.local.topology))
        assert service in services, f"unknown service {service!r}; the stack's: {services}"
        # the stack's pid file, as its status() reads it (without probing every service's
        # health first: a stall or kill acts at once)
        pid = running_pid(self.local.state_dir / "pids" / f"{service}.pid")
        assert isinstance(pid, int), f"{service} is not running"
        return pid

    def kill(self, service: str, first_signal: int = signal.SIGKILL) -> None:
        """Kill ``service``'s whole process group (default ``kill -9``); returns once it is gone."""
        stop_process_group(self.pid(service), first_signal=first_signal, grace_s=5.0)

    def restart(self, service: str) -> None:
        """Start the stopped ``service`` again (``up``: running ones are left alone; while its
        port is still held, retried each second for up to ``READY_TIMEOUT_S``) and wait until
        it is ready for clients (:meth:`wait_ready`)."""
        started = time.monotonic()
        while True:
            try:
                self.up()
                break
            except PortBusyError:
                # the killed JVM's accepted connections outlive it a while (FIN_WAIT) and hold
                # its port when its listener did not set SO_REUSEADDR: wait them out, bounded
                if time.monotonic() - started > READY_TIMEOUT_S:
                    raise
                time.sleep(1.0)
        self.wait_ready(service)
        # every service healthy again: a health probe may time out once on a loaded machine
        while not self.local.is_up():
            assert time.monotonic() - started < READY_TIMEOUT_S, (
                f"{service} did not come back: {self.local.status()}"
            )
            time.sleep(1.0)
        self.restarts.append((service, round(time.monotonic() - started, 1)))

    def kill_and_restart(self, service: str, first_signal: int = signal.SIGKILL) -> None:
        """Kill ``service`` (its whole process group; default ``kill -9``) and start it again."""
        self.kill(service, first_signal)
        self.restart(service)

    def wait_ready(self, service: str, timeout: float = READY_TIMEOUT_S) -> None:
        """Wait (bounded) until ``service`` serves what the pipeline uses, beyond the stack's
        health check: ``kafka`` every partition has a leader and every group coordinator has
        loaded its offsets; ``hbase``/``hbase-thrift`` every table answers a read through
        Thrift (its regions are online again after the crash and WAL replay). AssertionError
        naming what is not ready after ``timeout`` seconds."""
        probe = {
            "kafka": self._kafka_unready,
            "hbase": self._hbase_unready,
            "hbase-thrift": self._hbase_unready,
        }
        base, _, number = service.rpartition("-")
        check = probe.get(base if number.isdigit() else service)  # kafka-2 as kafka, ...
        if check is None:
            return
        deadline = time.monotonic() + timeout
        while (unready := check()) is not None:
            assert time.monotonic() < deadline, (
                f"{service} not ready {timeout:g} s after its restart: {unready}"
            )
            time.sleep(0.3)

    def _kafka_unready(self) -> str | None:
        """None when ready, else what is not (a leaderless partition, a loading coordinator)."""
        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        try:
            metadata = admin.list_topics(timeout=5)
        except Exception as exc:
            return f"metadata: {exc}"
        for name, topic in metadata.topics.items():
            if topic.error is not None:
                return f"topic {name}: {topic.error}"
            for number, partition in topic.partitions.items():
                if partition.error is not None or partition.leader < 0:
                    return f"{name}[{number}] has no leader ({partition.error})"
        offsets_topic = metadata.topics.get(OFFSETS_TOPIC)
        # The first group lookup of a new cluster creates the offsets topic: ask until it exists.
        groups = (
            coordinator_probe_groups(len(offsets_topic.partitions)) if offsets_topic else ["eo-fault-probe"]
        )
        for group in groups:
            consumer = Consumer(
                {"bootstrap.servers": self.bootstrap, "group.id": group, "enable.auto.commit": False}
            )
            try:
                consumer.committed([TopicPartition(OFFSETS_TOPIC, 0)], timeout=5)
            except KafkaException as exc:
                return f"group coordinator of {group}: {exc}"
            finally:
                consumer.close()
        return None if offsets_topic else f"{OFFSETS_TOPIC} not created yet"

    def _hbase_unready(self) -> str | None:
        """None when every table answers a one-row scan through Thrift, else the first that does not."""
        try:
            connection = self.hbase(timeout_ms=10000)
        except Exception as exc:
            return f"Thrift: {exc}"
        try:
            for table in connection.tables():
                try:
                    next(iter(connection.table(table).scan(limit=1)), None)
                except Exception as exc:
                    return f"table {table.decode()}: {type(exc).__name__}: {exc}"
        except Exception as exc:
            return f"Thrift getTableNames: {exc}"
        finally:
            connection.close()
        return None

    @contextlib.contextmanager
    def broker_stalled(self) -> Iterator[None]:
        """SIGSTOP the Kafka JVM for the block, SIGCONT afterwards (always); then wait until it is
        ready again (:meth:`wait_ready`)."""
        pid = self.pid("kafka")
        os.kill(pid, signal.SIGSTOP)
        try:
            yield
        finally:
            os.kill(pid, signal.SIGCONT)
        # The controller (same JVM) may have expired the broker's session while both were
        # stopped: partitions are leaderless until the broker heartbeats again.
        self.wait_ready("kafka")

    def healthy(self) -> bool:
        return self.local.is_up()

    @property
    def table_tool(self) -> HBaseTableTool:
        """HBase's Java Admin API on this stack: pre-split tables, regions, splits, moves."""
        return HBaseTableTool(self.state_dir)


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode`` (how Kafka maps a group id to its coordinator partition)."""
    data = text.encode("utf-16-be")
    h = 0
    for i in range(0, len(data), 2):  # UTF-16 code units, as Java's chars
        h = (31 * h + int.from_bytes(data[i : i + 2], "big")) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def coordinator_probe_groups(partitions: int) -> list[str]:
    """One group id per ``__consumer_offsets`` partition (``abs(hash) % partitions``), so a
    request per group reaches every group coordinator; [] when the topic does not exist."""
    found: dict[int, str] = {}
    i = 0
    while len(found) < partitions:
        group = f"eo-fault-probe-{i}"
        found.setdefault((java_string_hash(group) & 0x7FFFFFFF) % partitions, group)
        i += 1
    return [found[p] for p in sorted(found)]


@dataclass
class StepResult:
    """A step run in a child process: exit status, its JSON result (if any), output."""

    returncode: int
    result: Any
    output: str
    timed_out: bool = False


@dataclass
class LoggedProcess:
    """A child process (own session) whose stdout and stderr go to ``log_path``."""

    kind: ClassVar[str] = "process"  # names the process in failure messages

    proc: subprocess.Popen[bytes]
    log_path: Path

    def output(self) -> str:
        return self.log_path.read_text(errors="replace")

    def wait_for_output(self, text: str, timeout: float = 120) -> None:
        """Wait until the output contains ``text`` (e.g. ``task start``, a fault point's
        announcement); AssertionError if the process exits first or ``timeout`` passes. Polls
        every 50 ms: a test acts on the moment (e.g. stalls the broker once the driver logged
        its plan, before the tasks read)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if text in self.output():
                return
            if self.proc.poll() is not None:
                raise AssertionError(
                    f"{self.kind} exited {self.proc.returncode} before {text!r}:\n{self.output()[-3000:]}"
                )
            time.sleep(0.05)
        raise AssertionError(f"{text!r} not in the {self.kind}'s output after {timeout}s")


@dataclass
class WriteProc(LoggedProcess):
    """A running ``spark-submit`` of the application (own session, so it can be reaped)."""

    kind: ClassVar[str] = "spark-submit"

    epoch_id: int

    def wait(self, timeout: float = 240) -> int:
        try:
            return self.proc.wait(timeout)
        finally:
            self.cleanup()

    def driver_pid(self, timeout: float = 60) -> int:
        """Pid of the Python driver (the child of spark-submit's JVM running application.py), waited for
        up to ``timeout`` seconds; AssertionError when none shows."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            pid = self.running_driver()
            if pid is not None:
                return pid
            time.sleep(0.2)
        raise AssertionError(f"no Spark driver process found for epoch {self.epoch_id}")

    def running_driver(self) -> int | None:
        """Pid of the Python driver if it runs now (one look at /proc), else None: not started
        yet, or done (the JVM may still be stopping after it)."""
        marker = ["--epoch-id", str(self.epoch_id)]
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                argv = (entry / "cmdline").read_bytes().decode(errors="replace").split("\0")
                if "java" in Path(argv[0]).name or not any(a.endswith("application.py") for a in argv):
                    continue
                if any(argv[i : i + 2] == marker for i in range(len(argv))) and os.getsid(
                    int(entry.name)
                ) == (self.proc.pid):
                    return int(entry.name)
            except OSError:  # the process exited while we looked at it
                continue
        return None

    def wait_for_hanging(self, count: int, timeout: float = 120) -> list[int]:
        """Pids of the Python workers standing at the ``spark.task.after_segment`` hang point,
        once ``count`` distinct ones announced it (no HBase write of theirs is then in
        flight); AssertionError if the process exits first or ``timeout`` passes."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            pids = sorted({int(pid) for pid in TASK_HANGING_RE.findall(self.output())})
            if len(pids) >= count:
                return pids
            if self.proc.poll() is not None:
                raise AssertionError(
                    f"spark-submit exited {self.proc.returncode} with {len(pids)} of {count} tasks "
                    f"hanging:\n{self.output()[-3000:]}"
                )
            time.sleep(0.2)
        raise AssertionError(f"{count} Spark tasks not hanging at spark.task.after_segment after {timeout}s")

    def cleanup(self) -> None:
        """SIGKILL whatever is left of the session (JVM, Python workers)."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(10)


@dataclass
class StepProc(LoggedProcess):
    """A step (``tests.faults.steps``) running in a child process, output in ``log_path``."""

    kind: ClassVar[str] = "step"

    def result(self, timeout: float = 120) -> StepResult:
        """Wait (``timeout``: then SIGKILL the session); exit status, JSON result, output."""
        try:
            self.proc.wait(timeout)
            timed_out = False
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
            timed_out = True
        text = self.output()
        result = last_json_line(text) if self.proc.returncode == 0 else None
        return StepResult(self.proc.returncode, result, text, timed_out)


def last_json_line(text: str) -> Any:
    """The last line of a step's output that is JSON (its result): librdkafka may log a line
    to stderr after it (a producer's connection refused while a broker restarts)."""
    for line in reversed(text.strip().splitlines()):
        try:
            return json.loads(line)
        except ValueError:
            continue
    raise AssertionError(f"no JSON result line in the step's output:\n{text[-2000:]}")


@dataclass
class Case:
    """One pipeline of the suite and the protocol's steps on it."""

    stack: FaultStack
    spec: PipelineSpec
    pipelines_file: Path
    workdir: Path
    produced: list[ProducedRecord] = field(default_factory=list)
    partitions: int = 2
    big_records: bool = False  # produce near-limit records among the sample events
    #: How :meth:`write` and :meth:`run_epoch` write an epoch: None, the harness's spark-submit
    #: (``local[2]``); else ``writer(case, epoch_id, fencing_token, run_id) -> exit status``
    #: (``tests/faults/yarn_writes.py``: the write step in YARN cluster deploy mode).
    writer: Callable[[Case, int, str, str], int] | None = None
    #: Recovery's liveness answer for the steps driven here (``get_dr_count`` of the task
    #: context): None, no Airflow knows the case's runs (every other run counts as dead);
    #: else a real Airflow's (:class:`tests.faults.airflow_liveness.AirflowDagRunCount`,
    #: bound by ``PostgresAirflow.runner``).
    dag_run_count: Callable[..., int] | None = None

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def dag_id(self) -> str:
        return stream_dag_id(self.spec.name)

    def env(self, faults: str | None = None, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("EO_FAULT")}
        env.update(self.stack.conn_env)
        env.update(
            PYSPARK_PYTHON=sys.executable,
            PYSPARK_DRIVER_PYTHON=sys.executable,
            EO_PIPELINES_FILE=str(self.pipelines_file),
        )
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
        if faults:
            env.update(crash_env(faults))
        env.update(extra)
        return env

    # -- data ------------------------------------------------------------------------

    def produce(self, count: int, seed: int) -> list[ProducedRecord]:
        """Produce ``count`` sample events (updates of few keys, tombstones, bad records; with
        ``big_records``, about 40% of the updates between 100 KB and 1 MB)."""
        events = big_sample_events if self.big_records else sample_events
        new = produce_records(
            self.stack.bootstrap,
            self.spec.topics[0],
            self.partitions,
            events(count, users=40, seed=seed),
        )
        self.produced.extend(new)
        return new

    # -- steps in this process ------------------------------------------------------

    def ledger(self) -> Ledger:
        return Ledger(self.stack.ledger_dsn)

    def epoch(self, epoch_id: int) -> Epoch:
        with self.ledger() as ledger:
            return ledger.get_epoch(epoch_id)

    def context(self, run_id: str) -> dict[str, Any]:
        """The task context of a step driven here: run ``run_id`` of the case's stream DAG,
        with :attr:`dag_run_count` as the ``ti``'s ``get_dr_count`` when bound."""
        extra = {} if self.dag_run_count is None else {"get_dr_count": self.dag_run_count}
        return task_context(run_id, self.dag_id, **extra)

    def recover(self, run_id: str) -> dict[str, Any]:
        op = RecoverEpochsOperator(
            task_id="recover", pipeline=self.name, pipelines_file=str(self.pipelines_file)
        )
        return op.execute(self.context(run_id))  # type: ignore[arg-type]

    def reserve(self, run_id: str) -> dict[str, Any] | None:
        op = ReserveEpochOperator(
            task_id="reserve", pipeline=self.name, pipelines_file=str(self.pipelines_file)
        )
        try:
            return op.execute(self.context(run_id))  # type: ignore[arg-type]
        except AirflowSkipException:
            return None

    def commit(self, epoch_id: int, run_id: str = "commit") -> dict[str, Any]:
        op = CommitEpochOperator(
            task_id="commit",
            pipeline=self.name,
            epoch_id=str(epoch_id),
            pipelines_file=str(self.pipelines_file),
        )
        return op.execute(self.context(run_id))  # type: ignore[arg-type]

    # -- steps in child processes -----------------------------------------------------

    def start_step(
        self,
        step: str,
        run_id: str,
        *,
        epoch_id: int | None = None,
        faults: str | None = None,
        extra_env: Mapping[str, str] | None = None,
    ) -> StepProc:
        """Start reserve/commit/recover in a child process (own session; returns at once)."""
        argv = [sys.executable, "-m", "tests.faults.steps", step, "--pipeline", self.name]
        argv += ["--pipelines-file", str(self.pipelines_file), "--dag-id", self.dag_id, "--run-id", run_id]
        if epoch_id is not None:
            argv += ["--epoch-id", str(epoch_id)]
        log_path = self.workdir / f"{step}-{run_id}-{uuid.uuid4().hex[:6]}.log"
        with log_path.open("wb") as log:
            env = self.env(faults, **(extra_env or {}))
            proc = subprocess.Popen(
                argv, env=env, cwd=REPO, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        return StepProc(proc, log_path)

    def start_commit_held(self, epoch_id: int, run_id: str, point: str, release: Path) -> StepProc:
        """Start ``epoch_id``'s commit held at fault ``point`` (``hang`` until ``release``
        exists, 120 s at most); returns once it hangs there."""
        commit = self.start_step(
            "commit", run_id, epoch_id=epoch_id, faults=f"{point}:hang", extra_env=hang_env(120, release)
        )
        commit.wait_for_output(f"EO fault point {point}: hanging")
        return commit

    def step(
        self,
        step: str,
        run_id: str,
        *,
        epoch_id: int | None = None,
        faults: str | None = None,
        timeout: float = 120,
    ) -> StepResult:
        """Run reserve/commit/recover in a child process (``timeout``: then SIGKILLed)."""
        return self.start_step(step, run_id, epoch_id=epoch_id, faults=faults).result(timeout)

    def start_write(
        self, epoch_id: int, *, faults: str | None = None, token: str | None = None, **extra_env: str
    ) -> WriteProc:
        """spark-submit the application for ``epoch_id`` (returns at once)."""
        argv = [SPARK_SUBMIT, "--master", "local[2]", *spark_conf_args(), str(app_module.__file__)]
        argv += [
            "--pipeline",
            self.name,
            "--epoch-id",
            str(epoch_id),
            "--pipelines-file",
            str(self.pipelines_file),
        ]
        if token:
            argv += ["--fencing-token", token]
        log_path = self.workdir / f"write-{epoch_id}-{uuid.uuid4().hex[:6]}.log"
        with log_path.open("wb") as log:
            proc = subprocess.Popen(
                argv, env=self.env(faults, **extra_env), cwd=self.workdir, stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )  # fmt: skip
        return WriteProc(proc, log_path, epoch_id)

    def write(
        self, epoch_id: int, *, faults: str | None = None, token: str | None = None, **extra_env: str
    ) -> int:
        """spark-submit and wait (or, with a ``writer``, its write under the epoch's token);
        returns the exit status."""
        if self.writer is not None and faults is None and not extra_env:
            return self.writer(self, epoch_id, token or self.epoch(epoch_id).fencing_token, "write")
        return self.start_write(epoch_id, faults=faults, token=token, **extra_env).wait()

    # -- whole epochs ----------------------------------------------------------------

    def run_epoch(self, run_id: str) -> int | None:
        """One clean stream run in this process: recover, reserve, write, commit.

        Returns the committed epoch id, or None when there was nothing to reserve."""
        self.recover(run_id)
        summary = self.reserve(run_id)
        if summary is None:
            return None
        epoch_id = int(summary["epoch_id"])
        if self.writer is not None:
            rc = self.writer(self, epoch_id, str(summary["fencing_token"]), run_id)
            assert rc == 0, f"clean write of epoch {epoch_id} failed (exit {rc}): see {self.workdir}"
            self.commit(epoch_id, run_id)
            return epoch_id
        proc = self.start_write(epoch_id)
        rc = proc.wait()
        assert rc == 0, f"clean write of epoch {epoch_id} failed (exit {rc}):\n{proc.output()[-3000:]}"
        self.commit(epoch_id, run_id)
        return epoch_id

    def drain(self, max_epochs: int = 8) -> int:
        """Clean stream runs until nothing is left; returns how many epochs were committed."""
        for n in range(max_epochs):
            if self.run_epoch(f"drain-{uuid.uuid4().hex[:8]}") is None:
                return n
        raise AssertionError(f"pipeline {self.name} not drained after {max_epochs} epochs")

    def drain_airflow(self, runner: AirflowRunner, max_runs: int = 4) -> list[DagRunOutcome]:
        """Real ``airflow dags test`` stream runs until the cursor reaches the produced ends."""
        outcomes = []
        for _ in range(max_runs):
            outcome = runner.run(self.dag_id)
            outcomes.append(outcome)
            assert outcome.state == "success", outcome.log[-4000:]
            if self.lag() == 0:
                return outcomes
        raise AssertionError(f"pipeline {self.name} not drained after {max_runs} Airflow runs")

    # -- checks ----------------------------------------------------------------------

    def ends(self) -> dict[tuple[str, int], int]:
        ends: dict[tuple[str, int], int] = {}
        for r in self.produced:
            ends[(r.topic, r.partition)] = max(ends.get((r.topic, r.partition), 0), r.offset + 1)
        return ends

    def lag(self) -> int:
        with self.ledger() as ledger:
            cursors = ledger.cursors(self.name)
        return sum(end - cursors.get(tp, 0) for tp, end in self.ends().items())

    def verify(self, produced: list[ProducedRecord] | None = None) -> Verification:
        """Every invariant of :func:`verify_pipeline`; with a dead-letter topic, also that it
        holds each of the ledger's dead letters exactly once (:meth:`dead_letter_topic_problems`)."""
        hbase = self.stack.hbase()
        try:
            with self.ledger() as ledger:
                result = verify_pipeline(
                    self.spec,
                    self.produced if produced is None else produced,
                    ledger=ledger,
                    offsets=EoKafkaHook(),
                    hbase=hbase,
                )
                result.problems += self.dead_letter_topic_problems(ledger)
                return result
        finally:
            hbase.close()

    def dead_letter_topic_problems(self, ledger: Ledger) -> list[str]:
        """The dead-letter topic (every partition, ``read_committed``) against the ledger and
        the produced records: each dead letter exactly once, in publish order, with the
        produced record's key and value and exactly the ``__eo.*`` headers
        (docs/dead_letters.md) of its ledger row; a keyed letter on partition
        ``crc32(key) % partitions``; none without a topic. ``__eo.epoch_id`` names the epoch
        that dead-lettered the record when it was published: a committed epoch whose ranges
        hold the source offset (a later epoch that dead-letters it again, a backfill over the
        same range, takes over the ledger row's epoch but does not publish it again)."""
        if self.spec.dead_letters is None:
            return []
        produced = {(r.topic, r.partition, r.offset): r for r in self.produced}
        letters = sorted(ledger.list_dead_letters(self.spec.name), key=lambda d: d["publish_seq"])
        expected = [topic_record_of(d, produced[(d["topic"], d["partition"], d["offset"])]) for d in letters]
        topic = self.spec.dead_letters.topic
        found = read_committed(self.stack.bootstrap, topic)
        committed = [
            e for e in ledger.epochs(EpochFilter(pipeline=self.name)) if e.state == EpochState.COMMITTED
        ]
        problems = []
        for records in found.values():
            for _, _, headers in records:
                named = {name: (raw or b"").decode() for name, raw in headers}
                source = (named["__eo.source.topic"], int(named["__eo.source.partition"]))
                offset = int(named["__eo.source.offset"])
                covering = sorted(
                    e.epoch_id
                    for e in committed
                    for r in e.ranges
                    if r.tp == source and r.start <= offset < r.end
                )
                if int(named["__eo.epoch_id"]) not in covering:
                    problems.append(
                        f"{topic}: letter of {source}@{offset} names epoch {named['__eo.epoch_id']}, "
                        f"not one of the committed epochs holding it {covering}"
                    )
        found = {p: [without_epoch_id(r) for r in records] for p, records in found.items()}
        expected = [without_epoch_id(r) for r in expected]
        layout = by_key_partition([r for r in expected if r[0]], len(found))
        keyless = sorted((r for r in expected if not r[0]), key=repr)
        found_keyless = sorted((r for records in found.values() for r in records if not r[0]), key=repr)
        found_keyed = {p: [r for r in records if r[0]] for p, records in found.items()}
        if found_keyed != layout or found_keyless != keyless:
            problems.append(f"dead-letter topic {topic}: {found} != expected {layout} + keyless {keyless}")
        return problems

    def hbase_cells(self) -> dict[bytes, dict[bytes, tuple[bytes, int]]]:
        """Every visible cell of the case's table: row -> column -> (value, version)."""
        hbase = self.stack.hbase()
        try:
            table = hbase.table(self.spec.hbase_table)
            return {row: dict(cells) for row, cells in table.scan(batch_size=1000, include_timestamp=True)}
        finally:
            hbase.close()

    def group_offsets(self) -> dict[tuple[str, int], int | None]:
        """The consumer group's committed offset of every produced partition (None: none)."""
        return EoKafkaHook().committed_offsets(self.spec.group_id, list(self.ends()))

    def epoch_rows(self) -> list[tuple[int, EpochState, dict[tuple[str, int], tuple[int, int]]]]:
        """(epoch id, state, {partition: (start, end)}) of the case's epochs, oldest first."""
        with self.ledger() as ledger:
            epochs = ledger.epochs(EpochFilter(pipeline=self.name))
        return [
            (e.epoch_id, e.state, {r.tp: (r.start, r.end) for r in e.ranges})
            for e in sorted(epochs, key=lambda e: e.epoch_id)
        ]

    def topic_contents(self) -> dict[tuple[str, int], list[tuple[int, bytes | None, bytes | None]]]:
        """What Kafka serves for each produced partition from offset 0 up to its produced end:
        (offset, key, value); equals :meth:`produced_contents` when no record was lost."""
        return {
            tp: consume_range(self.stack.bootstrap, tp[0], tp[1], 0, end) for tp, end in self.ends().items()
        }

    def produced_contents(self) -> dict[tuple[str, int], list[tuple[int, bytes | None, bytes | None]]]:
        """The produced records per partition as (offset, key, value), in offset order."""
        contents: dict[tuple[str, int], list[tuple[int, bytes | None, bytes | None]]] = {}
        for r in sorted(self.produced, key=lambda r: (r.topic, r.partition, r.offset)):
            contents.setdefault((r.topic, r.partition), []).append((r.offset, r.key, r.value))
        return contents

    def hbase_row_count(self) -> int:
        hbase = self.stack.hbase()
        try:
            return sum(1 for _ in hbase.table(self.spec.hbase_table).scan(batch_size=1000))
        finally:
            hbase.close()

    def wait_for_rows(self, timeout: float = 120) -> None:
        """Wait until the write has put something into HBase (it is mid-write)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.hbase_row_count() > 0:
                return
            time.sleep(0.3)
        raise AssertionError(f"no HBase rows in {self.spec.hbase_table} after {timeout}s")


def pipeline_entry(name: str, **options: Any) -> dict[str, Any]:
    """A ``pipelines:`` entry as the suite declares it: ``name``, its own group and HBase table
    (family ``d``), dead-lettering, batches of 25, one Spark split, :func:`spark_conf`; ``options``
    add the source (``topics``/``topic_pattern``) and replace or add any other setting (a
    ``spark`` option of its own, e.g. session mode, needs no spark-submit settings, so it does
    not wait for the session's driver archive)."""
    spark = options.pop("spark", None)
    return {
        "name": name,
        "group_id": f"g-{name}",
        "hbase": {"table": name, "column_family": "d"},
        "bad_records": "dead_letter",
        "batch_size": 25,
        "spark": {"split_size": 1000, "conf": spark_conf()} if spark is None else spark,
        **options,
    }


def declare_pipeline(
    stack: FaultStack, workdir: Path, entry: Mapping[str, Any], *, split_keys: Sequence[str] = ()
) -> tuple[PipelineSpec, Path]:
    """Write ``entry`` as ``<workdir>/<name>.yaml``, load it and create its HBase table (family
    ``d``; pre-split at ``split_keys``, as happybase would create it otherwise: 3 versions,
    no KEEP_DELETED_CELLS); returns (spec, pipelines file). Its topics are the caller's to create."""
    name = entry["name"]
    workdir.mkdir(parents=True, exist_ok=True)
    pipelines_file = workdir / f"{name}.yaml"
    pipelines_file.write_text(yaml.safe_dump({"pipelines": [dict(entry)]}))
    spec = load_pipelines(pipelines_file)[name]
    if split_keys:
        stack.table_tool.create(spec.hbase_table, "d", keep_deleted_cells=False, split_keys=split_keys)
        return spec, pipelines_file
    hbase = stack.hbase()
    try:
        hbase.create_table(spec.hbase_table, {"d": {}})
    finally:
        hbase.close()
    return spec, pipelines_file


def topic_record_of(letter: Mapping[str, Any], source: ProducedRecord) -> TopicRecord:
    """What the dead-letter topic must hold for ``letter`` (a ledger row of
    ``list_dead_letters``): ``source``'s key and value, then exactly the ``__eo.*`` headers
    of docs/dead_letters.md (the sample records carry no headers of their own)."""
    assert not letter["headers"], f"sample records have no headers: {letter['headers']}"
    headers = [
        ("__eo.errors.class", letter["error_class"] or "BadRecord"),
        ("__eo.errors.message", letter["error"]),
        ("__eo.source.topic", letter["topic"]),
        ("__eo.source.partition", letter["partition"]),
        ("__eo.source.offset", letter["offset"]),
        ("__eo.source.timestamp", letter["timestamp"]),
        ("__eo.pipeline", letter["pipeline"]),
        ("__eo.epoch_id", letter["epoch_id"]),
        ("__eo.schema_id", letter["schema_id"]),
    ]
    return (
        source.key,
        source.value,
        [(name, str(value).encode()) for name, value in headers if value is not None],
    )


def without_epoch_id(record: TopicRecord) -> TopicRecord:
    """``record`` without its ``__eo.epoch_id`` header (checked apart: see
    ``Case.dead_letter_topic_problems``)."""
    key, value, headers = record
    return key, value, [(name, raw) for name, raw in headers if name != "__eo.epoch_id"]


def new_case(
    stack: FaultStack,
    workdir: Path,
    tag: str,
    *,
    partitions: int = 2,
    records: int = 200,
    seed: int = 33,
    cap: int | None = 120,
    batch_size: int = 25,
    big_records: bool = False,
    dead_letter_topic: bool = False,
    split_keys: Sequence[str] = (),
    **options: Any,
) -> Case:
    """A fresh pipeline ``f_<tag>_<uid>`` with its topic and table (pre-split at ``split_keys``),
    ``records`` produced (near-limit records among them with ``big_records``); with
    ``dead_letter_topic``, its dead letters are published to a topic of its own (checked by
    :meth:`Case.verify`)."""
    uid = uuid.uuid4().hex[:6]
    name = f"f_{tag}_{uid}"
    topic = f"eo-fault-{tag}-{uid}"
    topics = [topic]
    if dead_letter_topic:
        options["dead_letters"] = {"topic": f"{topic}-dead-letters"}
        topics.append(f"{topic}-dead-letters")
    entry = pipeline_entry(name, batch_size=batch_size, **{"topics": [topic], **options})
    if cap is not None:
        entry["caps"] = {"max_records_total": cap}
    spec, pipelines_file = declare_pipeline(stack, workdir, entry, split_keys=split_keys)
    admin = AdminClient({"bootstrap.servers": stack.bootstrap})
    for created in topics:
        count = partitions if created == topic else DEAD_LETTER_PARTITIONS
        admin.create_topics([NewTopic(created, count)])[created].result(30)
    case = Case(stack, spec, pipelines_file, workdir, partitions=partitions, big_records=big_records)
    if records:
        case.produce(records, seed)
    return case


@contextlib.contextmanager
def running_fault_stack(
    prefix: str, topology: Topology | None = None, kept_dir_env: str = FAULT_STACK_DIR_ENV
) -> Iterator[FaultStack]:
    """A private :class:`FaultStack` of ``topology`` in a fresh state dir named ``prefix...``,
    its connections in the environment while the block runs; stopped and removed afterwards.

    With ``kept_dir_env`` (default ``EO_FAULT_STACK_DIR``) set, the stack of that state dir
    (``eo-stack up --state-dir``) is used instead (what is not running is started) and left
    running: a developer's stack for one fault test at a time."""
    from tests.conftest import new_stack_dir

    kept = os.environ.get(kept_dir_env)
    if kept:
        stack = FaultStack(Path(kept), topology)
        stack.up()
        previous = set_env(stack.conn_env)
        try:
            yield stack
        finally:
            restore_env(previous)
        return
    state_dir = new_stack_dir(prefix)
    stack = FaultStack(state_dir, topology)
    try:
        start_driver_archive()  # the spark-submits' class-data archive, built while the services start
        stack.up()
        previous = set_env(stack.conn_env)
        try:
            yield stack
        finally:
            restore_env(previous)
    finally:
        stack.down()
        shutil.rmtree(state_dir, ignore_errors=True)


def set_env(values: Mapping[str, str]) -> dict[str, str | None]:
    """Set process env vars; returns the previous values for :func:`restore_env`."""
    previous = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    return previous


def restore_env(previous: Mapping[str, str | None]) -> None:
    for key, value in previous.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


def hang_env(seconds: float, release_file: Path | None = None) -> dict[str, str]:
    """Environment for a ``hang`` fault action."""
    env = {FAULT_HANG_ENV: str(seconds)}
    if release_file is not None:
        env[FAULT_RELEASE_ENV] = str(release_file)
    return env


# -- bad input and bad configuration (tests/faults/test_bad_config.py) -------------------

#: Every ``eo`` table of the ledger and the columns its rows are ordered by.
LEDGER_TABLES: dict[str, str] = {
    "pipelines": "1",
    "partitions": "1, 2, 3",
    "epochs": "1",
    "epoch_ranges": "1, 2, 3",
    "gaps": "1, 2, 3, 4",
    "dead_letters": "1, 2, 3, 4",
}


def ledger_snapshot(dsn: str, *, exclude_pipeline: str | None = None) -> dict[str, list[Any]]:
    """Every row of every ``eo`` table (and the table list), to prove a step changed nothing.

    ``exclude_pipeline``: leave that pipeline's rows out (its own progress may change).
    Applies pending migrations first (a fresh stack has no ``eo`` tables yet)."""
    import psycopg2

    with Ledger(dsn) as ledger:
        ledger.migrate()
    snapshot: dict[str, list[Any]] = {}
    with psycopg2.connect(dsn) as conn, conn.cursor() as cur:
        for table, order in LEDGER_TABLES.items():
            if table == "epoch_ranges":
                where = (
                    "WHERE epoch_id IN (SELECT epoch_id FROM eo.epochs WHERE pipeline IS DISTINCT FROM %s)"
                )
            else:
                where = "WHERE " + ("name" if table == "pipelines" else "pipeline") + " IS DISTINCT FROM %s"
            cur.execute(f"SELECT * FROM eo.{table} {where} ORDER BY {order}", (exclude_pipeline,))
            snapshot[table] = [
                tuple(bytes(v) if isinstance(v, memoryview) else v for v in row) for row in cur.fetchall()
            ]
        cur.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'eo' ORDER BY 1")
        snapshot["tables"] = [row[0] for row in cur.fetchall()]
    conn.close()
    return snapshot


def create_topic(stack: FaultStack, topic: str, partitions: int) -> None:
    """Create ``topic``, retrying while the broker still finishes deleting a namesake."""
    admin = AdminClient({"bootstrap.servers": stack.bootstrap})
    deadline = time.monotonic() + 30
    while True:
        try:
            admin.create_topics([NewTopic(topic, partitions)])[topic].result(15)
            return
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def delete_topic(stack: FaultStack, topic: str) -> None:
    """Delete ``topic`` and wait until the broker's metadata no longer lists it."""
    admin = AdminClient({"bootstrap.servers": stack.bootstrap})
    admin.delete_topics([topic])[topic].result(15)
    deadline = time.monotonic() + 30
    while topic in admin.list_topics(timeout=10).topics:
        assert time.monotonic() < deadline, f"topic {topic} still listed after its deletion"
        time.sleep(0.2)


def produce_to(case: Case, topic: str, count: int, seed: int, *, partitions: int) -> list[ProducedRecord]:
    """Produce ``count`` sample events to ``topic`` (a topic of a pattern pipeline) and add
    them to ``case.produced``. Keys are prefixed with the topic, so topics never share an
    HBase row (the oracle orders records per partition, not across topics)."""
    events = (
        (f"{topic}/".encode() + (key or b""), value)
        for key, value in sample_events(count, users=40, seed=seed)
    )
    new = produce_records(case.stack.bootstrap, topic, partitions, events)
    case.produced.extend(new)
    return new


def new_pattern_case(
    stack: FaultStack, workdir: Path, tag: str, *, partitions: int = 2, **options: Any
) -> tuple[Case, str]:
    """A fresh pipeline ``f_<tag>_<uid>`` declared with ``topic_pattern: <prefix>-.*`` and
    its first matching topic ``<prefix>-a`` (no records yet); returns (case, prefix)."""
    uid = uuid.uuid4().hex[:6]
    name = f"f_{tag}_{uid}"
    prefix = f"eo-fault-{tag}-{uid}"
    entry = pipeline_entry(name, **{"topic_pattern": f"{prefix}-.*", **options})
    spec, pipelines_file = declare_pipeline(stack, workdir, entry)
    create_topic(stack, f"{prefix}-a", partitions)
    return Case(stack, spec, pipelines_file, workdir, partitions=partitions), prefix
