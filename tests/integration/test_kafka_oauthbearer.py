"""Kafka over SASL_SSL with OAUTHBEARER: reserve, the spark-submit write and commit, and a wrong
client secret refused with nothing changed.

A private broker (``oauth_kafka.py``: the devstack's ``OAuthKafkaService``) serves SASL_SSL with
OAUTHBEARER only, validating ES256 JWTs against the JWKS of an OAuth issuer served over TLS
(``OAuthIssuer``); the pipeline's ``eo_kafka`` uses librdkafka's OIDC client credentials
(``sasl.oauthbearer.method=oidc``) against the issuer's token endpoint. PostgreSQL and HBase
are the session's stack. A /proc scanner watches every command line for the client secret.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import happybase
import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from airflow_provider_eo.clients.kafka_errors import EoKafkaError
from airflow_provider_eo.hooks.kafka import EoKafkaHook
from airflow_provider_eo.ledger import EpochState, Ledger
from airflow_provider_eo.ledger.model.read_model import EpochFilter
from tests.integration.oauth_kafka import OAuthKafka, oauth_kafka
from tests.integration.operator_support import (  # noqa: F401 (fixtures)
    commit,
    conn_env_fixture,
    ledger_fixture,
    pipeline_fixture,
    ranges,
    reserve,
)
from tests.integration.spark_submit import spark_env, submit_write
from tests.kafka_helpers import produce
from tests.process_scan import CommandLineScanner

pytestmark = pytest.mark.integration
#: librdkafka's error when the token endpoint refuses the client (its 401 answer's body)
TOKEN_REFUSED = 'Failed to acquire SASL OAUTHBEARER token: {"error": "invalid_client"}'


@pytest.fixture(scope="module")
def broker() -> Iterator[OAuthKafka]:
    with oauth_kafka() as running:
        yield running


def new_topic(broker: OAuthKafka, counts: list[int]) -> str:
    """A topic on the broker with ``counts[p]`` records ``k<p>-<i>`` -> ``{"n": i}`` per partition."""
    topic = f"eo-oauth-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": broker.plaintext})
    admin.create_topics([NewTopic(topic, len(counts), 1)])[topic].result(30)
    for p, count in enumerate(counts):
        records = [(f"k{p}-{i}", json.dumps({"n": i})) for i in range(count)]
        produce(broker.plaintext, topic, records, partition=p)
    return topic


def test_reserve_write_commit_over_oauthbearer(
    stack, broker: OAuthKafka, ledger: Ledger, pipeline, monkeypatch: pytest.MonkeyPatch
) -> None:
    topic = new_topic(broker, [3, 2])
    name, group, file = pipeline(topics=[topic])
    conn = broker.conn_json()
    monkeypatch.setenv("AIRFLOW_CONN_EO_KAFKA", conn)
    hbase = happybase.Connection(stack.hbase_host, stack.hbase_port)
    hbase.create_table(name, {"d": {"max_versions": 1}})
    issued_before = broker.issuer.issued
    try:
        with CommandLineScanner([broker.client_secret, conn], watch=name) as scanner:
            summary = reserve(name, file)
            assert ranges(summary) == [(topic, 0, 0, 3), (topic, 1, 0, 2)]
            env = spark_env({**stack.conn_env, "AIRFLOW_CONN_EO_KAFKA": conn})
            result = submit_write(Path(file), name, summary["epoch_id"], env)
            assert result.returncode == 0, result.output[-4000:]
            committed = commit(name, file, summary["epoch_id"])
        assert committed["state"] == "COMMITTED"
        assert dict(hbase.table(name).scan()) == {
            f"k{p}-{i}".encode(): {b"d:n": str(i).encode()}
            for p, count in enumerate([3, 2])
            for i in range(count)
        }
        offsets = EoKafkaHook().committed_offsets(group, [(topic, 0), (topic, 1)])
        assert offsets == {(topic, 0): 3, (topic, 1): 2}
        assert broker.issuer.issued > issued_before  # tokens came from the token endpoint
        assert scanner.leaks == [] and scanner.watched  # spark-submit ran, no secret in any argv
        assert broker.client_secret not in result.output
    finally:
        hbase.delete_table(name, disable=True)
        hbase.close()


def test_wrong_client_secret_fails_reserve_and_commit_and_changes_nothing(
    stack, broker: OAuthKafka, ledger: Ledger, pipeline, monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    topic = new_topic(broker, [2])
    name, group, file = pipeline(topics=[topic])
    wrong = "oidc-" + uuid.uuid4().hex
    bad = broker.conn_json(**{"sasl.oauthbearer.client.secret": wrong, "eo.timeout.ms": "3000"})
    refused_before = broker.issuer.refused
    monkeypatch.setenv("AIRFLOW_CONN_EO_KAFKA", bad)
    with pytest.raises(EoKafkaError) as failed:
        reserve(name, file)
    error = str(failed.value)
    assert error.startswith(f"pipeline {name!r}: Kafka connection 'eo_kafka': cannot list topics: "), error
    assert error.endswith(f"(client errors: {TOKEN_REFUSED})"), error
    assert ledger.epochs(EpochFilter(pipeline=name)) == []
    assert broker.issuer.refused > refused_before  # the token endpoint said invalid_client
    assert wrong not in error and broker.client_secret not in error
    assert wrong not in capfd.readouterr().err
    # the group's offsets unchanged: a commit with the wrong secret publishes nothing
    monkeypatch.setenv("AIRFLOW_CONN_EO_KAFKA", broker.conn_json())
    summary = reserve(name, file)
    ledger.vote_written(summary["epoch_id"], summary["fencing_token"], {"records": 2})
    monkeypatch.setenv("AIRFLOW_CONN_EO_KAFKA", bad)
    with pytest.raises(EoKafkaError) as commit_failed:
        commit(name, file, summary["epoch_id"])
    assert ledger.get_epoch(summary["epoch_id"]).state == EpochState.WRITTEN
    monkeypatch.setenv("AIRFLOW_CONN_EO_KAFKA", broker.conn_json())
    assert EoKafkaHook().committed_offsets(group, [(topic, 0)]) == {(topic, 0): None}
    assert str(commit_failed.value).startswith(f"commit to group {group!r} of {topic}[0]=2: ")
    named = f"(client errors: {TOKEN_REFUSED}) (Kafka connection 'eo_kafka')"
    assert str(commit_failed.value).endswith(named)
