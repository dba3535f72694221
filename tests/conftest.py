"""Shared fixtures: the local stack (session-wide) and Kafka topics.

``stack``: a running LocalStack in a fresh temp state dir, stopped at session end.
``schema_registry_url``: the stack's Schema Registry (Apicurio, Confluent-compatible API).
``airflow_server``: the session's real Airflow on that stack (tests/airflow_server.py),
started only when a test uses it.
``kerberos_stack``: the stack's KDC and Kerberized HBase (``eo-stack up --kerberos``), started
on first use.
``yarn``: the stack's YARN (tests/yarn_support.py), started on first use, stopped at session
end only if this session started it.
A stack this session started is SIGKILLed at its end with all it runs (YARN, the KDC),
not stopped gracefully: its state dir is deleted next.
Set ``EO_TEST_REUSE_STACK_DIR`` to the state dir of a stack started with
``eo-stack up --state-dir DIR`` to reuse it (it is then left running).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from eo_devtools.stack.process import kill_state_dir
from eo_devtools.stack.stack import LocalStack
from tests.spark_startup import close_driver_archive, start_driver_archive

pytest_plugins = ["tests.module_times"]

if TYPE_CHECKING:
    from tests.airflow_server import AirflowServer
    from tests.yarn_support import YarnInfo


@dataclass(frozen=True)
class StackInfo:
    """Connection facts of the running local stack used by integration tests."""

    state_dir: Path
    ledger_dsn: str
    kafka_bootstrap: str
    hbase_host: str
    hbase_port: int
    schema_registry_url: str
    conn_env: dict[str, str]


def _info(stack: LocalStack) -> StackInfo:
    return StackInfo(
        state_dir=stack.state_dir,
        ledger_dsn=stack.ledger_dsn,
        kafka_bootstrap=stack.kafka_bootstrap,
        hbase_host=stack.hbase_host,
        hbase_port=stack.hbase_port,
        schema_registry_url=stack.schema_registry_url,
        conn_env=stack.conn_env(),
    )


def new_stack_dir(prefix: str = "eo-stack-") -> Path:
    """A fresh state dir under /tmp that PostgreSQL's OS user can enter."""
    path = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    path.chmod(0o755)
    return path


@pytest.fixture(scope="session")
def stack() -> Iterator[StackInfo]:
    reuse = os.environ.get("EO_TEST_REUSE_STACK_DIR")
    if reuse:
        existing = LocalStack(reuse)
        if not existing.is_up():
            raise RuntimeError(f"EO_TEST_REUSE_STACK_DIR={reuse}: no healthy stack there (run eo-stack up)")
        yield _info(existing)
        return
    state_dir = new_stack_dir()
    local = LocalStack(state_dir)
    start_driver_archive()  # the spark-submits' class-data archive, built while the services start
    _THROWAWAY_STATE_DIRS.add(state_dir)
    try:
        local.up()
        yield _info(local)
    finally:
        # Deleted next: SIGKILL (no graceful stop of HBase, Kafka, YARN, the KDC: tens of
        # seconds that prove nothing; test_devstack.py tests ``eo-stack down`` itself).
        kill_state_dir(state_dir)
        shutil.rmtree(state_dir, ignore_errors=True)


_THROWAWAY_STATE_DIRS: set[Path] = set()
"""State dirs of the stacks this session started (and kills at its end, with all they run)."""


def is_throwaway(stack: StackInfo) -> bool:
    """True when ``stack`` is the session's own (not a reused one): what runs on it needs no
    stop of its own, the ``stack`` fixture's end kills it."""
    return stack.state_dir in _THROWAWAY_STATE_DIRS


@pytest.fixture(scope="session")
def schema_registry_url(stack: StackInfo) -> str:
    """Base URL of the stack's Schema Registry (Confluent-compatible API)."""
    return stack.schema_registry_url


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    close_driver_archive()  # the session's Spark class-data archive (tests/spark_startup.py)


LONG_MODE_ENV = "EO_FAULT_LONG"
"""Set to 1 to run the tests marked ``long_faults`` (the fault suite's long mode, docs/faults.md)."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests that use the session's real Airflow run last, one after the other: its
    scheduler, dag-processor and triggerer then never share the 2 cores with the rest.
    Tests marked ``long_faults`` are skipped unless ``EO_FAULT_LONG=1``."""
    items.sort(key=lambda item: "airflow_server" in getattr(item, "fixturenames", ()))
    if os.environ.get(LONG_MODE_ENV) != "1":
        skip = pytest.mark.skip(reason=f"long mode: set {LONG_MODE_ENV}=1 (docs/faults.md)")
        for item in items:
            if item.get_closest_marker("long_faults"):
                item.add_marker(skip)


@pytest.fixture(scope="session")
def yarn(stack: StackInfo) -> Iterator[YarnInfo]:
    """The stack's YARN (a ResourceManager and one NodeManager), for the whole session."""
    from tests.yarn_support import running_yarn

    with running_yarn(stack.state_dir, stop=not is_throwaway(stack)) as info:
        yield info


@pytest.fixture(scope="session")
def kerberos_stack(stack: StackInfo) -> Iterator[dict[str, str]]:
    """``eo-stack up --kerberos`` on the session's stack: the KDC and the Kerberized HBase with its
    SASL Thrift server (devtools/eo_devtools/stack/hbase_kerberos.py), started on first use and
    stopped at session end if this session started them (on a stack the session started
    itself, killed with it: :func:`is_throwaway`). Yields the stack's ``AIRFLOW_CONN_*``
    values, ``AIRFLOW_CONN_EO_HBASE_KERBEROS`` among them."""
    local = LocalStack(stack.state_dir)
    started = "AIRFLOW_CONN_EO_HBASE_KERBEROS" not in local.conn_env()
    local.up(kerberos=True)
    try:
        yield local.conn_env()
    finally:
        if started and not is_throwaway(stack):
            local.up(kerberos=False)


@pytest.fixture(scope="session")
def airflow_server(stack: StackInfo) -> Iterator[AirflowServer]:
    """The session's real Airflow on ``stack`` (tests/airflow_server.py), started on first use."""
    from tests.airflow_server import running_airflow_server

    with running_airflow_server(stack) as server:
        yield server


@contextlib.contextmanager
def topic_factory(bootstrap: str) -> Iterator[Callable[..., str]]:
    """``make(partitions=1, prefix="t") -> topic name``: uuid-named topics, deleted when the block ends."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    created: list[str] = []

    def make(partitions: int = 1, prefix: str = "t") -> str:
        name = f"{prefix}-{uuid.uuid4().hex[:12]}"
        futures = admin.create_topics([NewTopic(name, num_partitions=partitions)])
        futures[name].result(timeout=60)  # a broker just back from an outage may be slow to answer
        created.append(name)
        return name

    yield make
    if created:
        for future in admin.delete_topics(created).values():
            with contextlib.suppress(Exception):  # a test may have deleted its topic itself
                future.result(timeout=15)


@pytest.fixture
def kafka_topic_factory(stack: StackInfo) -> Iterator[Callable[..., str]]:
    """:func:`topic_factory` on the stack: topics deleted after the test."""
    with topic_factory(stack.kafka_bootstrap) as make:
        yield make


@pytest.fixture(scope="module")
def module_topic_factory(stack: StackInfo) -> Iterator[Callable[..., str]]:
    """:func:`topic_factory` on the stack: topics deleted after the test module (for module-scoped
    fixtures whose topics the module's tests only read)."""
    with topic_factory(stack.kafka_bootstrap) as make:
        yield make
