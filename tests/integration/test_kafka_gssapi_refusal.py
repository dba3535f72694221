"""A Kafka connection with ``sasl.mechanism=GSSAPI`` is refused before anything runs.

The confluent-kafka wheel's librdkafka is built without libsasl2 (``builtin.features`` has no
``sasl_gssapi``), so every step that builds a Kafka client from such a connection refuses it
with ``KafkaFeatureMissing`` before it touches the ledger: the reserve and commit operators
(real ledger and broker), the write application's driver entry (``application.main``, the
spark-submit application file, run in process: the refusal comes before Spark starts) and
``eo-ledger commit``. Each test asserts the exact message and that nothing changed: no epoch,
the epoch's state, no HBase cell, no group offset.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Iterator
from typing import Any

import happybase
import pytest
from confluent_kafka import libversion

from airflow_provider_eo.cli.eo_ledger import main as eo_ledger
from airflow_provider_eo.clients.kafka_client_features import KafkaFeatureMissing, build_features
from airflow_provider_eo.ledger import EpochState, Ledger
from airflow_provider_eo.ledger.model.read_model import EpochFilter
from airflow_provider_eo.spark.driver.application import main as write_application
from airflow_provider_eo.spark.driver.write_epoch import ExitCode
from tests.integration.operator_support import (  # noqa: F401 (fixtures)
    commit,
    conn_env_fixture,
    fill,
    kafka_fixture,
    ledger_fixture,
    pipeline_fixture,
    reserve,
    vote,
)

pytestmark = pytest.mark.integration
APPLICATION = "airflow_provider_eo.spark.driver.application"  # the driver's logger


@contextlib.contextmanager
def driver_logging() -> Iterator[None]:
    """The package logger as it was after the block: the driver's ``configure_logging`` gives it
    a handler on this test's captured stderr, which later tests must not write to (closed)."""
    logger = logging.getLogger("airflow_provider_eo")
    handlers, level, propagate = list(logger.handlers), logger.level, logger.propagate
    try:
        yield
    finally:
        logger.handlers[:] = handlers
        logger.setLevel(level)
        logger.propagate = propagate


#: the confluent-kafka 2.16.1 wheel's librdkafka (PyPI), as it reports itself
WHEEL_FEATURES = (
    "gzip,snappy,ssl,sasl,regex,lz4,sasl_plain,sasl_scram,plugins,zstd,sasl_oauthbearer,http,oidc"
)
REFUSAL = (
    f"Kafka connection 'eo_kafka': sasl.mechanism=GSSAPI needs librdkafka feature 'sasl_gssapi', "
    f"which this confluent-kafka's librdkafka {libversion()[0]} was built without (its "
    f"builtin.features: {WHEEL_FEATURES}); install a confluent-kafka built against a librdkafka "
    f">= 2.16.0 configured with libsasl2 (cyrus-sasl), e.g. librdkafka built from source with "
    f"libsasl2-dev and libkrb5-dev, then `pip install --no-binary confluent-kafka "
    f"confluent-kafka==<the pinned version>` against it"
)


def gssapi_conn(stack: Any) -> str:
    """``eo_kafka`` as a Kerberized cluster's client would set it (the broker is never reached)."""
    extra = {
        "bootstrap.servers": stack.kafka_bootstrap,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "GSSAPI",
        "sasl.kerberos.service.name": "kafka",
        "sasl.kerberos.principal": "eo-writer@EO.TEST",
        "sasl.kerberos.keytab": "/nonexistent/eo-writer.keytab",
    }
    return json.dumps({"conn_type": "kafka", "extra": extra})


@pytest.fixture(autouse=True)
def _this_build_has_no_gssapi() -> None:
    assert ",".join(build_features()) == WHEEL_FEATURES  # the pinned wheel, as the issue verified


def test_reserve_refuses_gssapi_and_opens_no_epoch(stack, ledger: Ledger, pipeline, kafka_topic_factory,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    topic = kafka_topic_factory(partitions=2, prefix="gssapi")
    fill(stack, topic, [3, 2])
    name, _, file = pipeline(topics=[topic])
    monkeypatch.setenv("AIRFLOW_CONN_EO_KAFKA", gssapi_conn(stack))
    with pytest.raises(KafkaFeatureMissing) as refused:
        reserve(name, file)
    assert str(refused.value) == REFUSAL
    assert ledger.epochs(EpochFilter(pipeline=name)) == []


def test_write_commit_and_eo_ledger_refuse_gssapi_and_change_nothing(
    stack, ledger: Ledger, kafka, pipeline, kafka_topic_factory, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    topic = kafka_topic_factory(partitions=2, prefix="gssapi")
    fill(stack, topic, [3, 2])
    name, group, file = pipeline(topics=[topic])
    hbase = happybase.Connection(stack.hbase_host, stack.hbase_port)
    hbase.create_table(name, {"d": {"max_versions": 1}})
    try:
        summary = reserve(name, file)  # the stack's own PLAINTEXT connection
        epoch_id = summary["epoch_id"]
        monkeypatch.setenv("AIRFLOW_CONN_EO_KAFKA", gssapi_conn(stack))
        # the write application: exit INVALID, before the ledger and Spark; not voted, no cell
        monkeypatch.setenv("EO_PIPELINES_FILE", file)
        args = ["--pipeline", name, "--epoch-id", str(epoch_id), "--fencing-token", summary["fencing_token"]]
        capsys.readouterr()
        with driver_logging():
            assert write_application(args) == ExitCode.INVALID
        assert f"ERROR {APPLICATION} pipeline={name} epoch_id={epoch_id}: cannot write: {REFUSAL}\n" in (
            capsys.readouterr().err
        )
        assert ledger.get_epoch(epoch_id).state == EpochState.RESERVED
        assert list(hbase.table(name).scan()) == []
        # the commit operator and eo-ledger commit: refused, the WRITTEN epoch and the group unchanged
        vote(ledger, summary)
        with pytest.raises(KafkaFeatureMissing) as refused:
            commit(name, file, epoch_id)
        assert str(refused.value) == REFUSAL
        capsys.readouterr()
        status = eo_ledger(["commit", str(epoch_id), "--yes", "--pipelines-file", file])
        assert status == 1
        assert json.loads(capsys.readouterr().err.strip().splitlines()[-1]) == {
            "error": REFUSAL,
            "type": "KafkaFeatureMissing",
        }
        assert ledger.get_epoch(epoch_id).state == EpochState.WRITTEN
        monkeypatch.setenv("AIRFLOW_CONN_EO_KAFKA", stack.conn_env["AIRFLOW_CONN_EO_KAFKA"])
        assert kafka.committed_offsets(group, [(topic, 0), (topic, 1)]) == {
            (topic, 0): None,
            (topic, 1): None,
        }
    finally:
        hbase.delete_table(name, disable=True)
        hbase.close()
