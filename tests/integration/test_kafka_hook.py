"""EoKafkaHook against the real local broker (Tansu): discovery, watermarks, group offsets."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from airflow_provider_eo.hooks.kafka import EoKafkaError, EoKafkaHook
from airflow_provider_eo.ledger.offsets import OffsetPublisher, OffsetSource
from tests.kafka_helpers import hang_up_listener, produce

pytestmark = pytest.mark.integration


@pytest.fixture
def hook(stack, monkeypatch: pytest.MonkeyPatch) -> EoKafkaHook:
    for name, value in stack.conn_env.items():
        monkeypatch.setenv(name, value)
    return EoKafkaHook()


def _fill(bootstrap: str, topic: str, counts: list[int]) -> None:
    for partition, count in enumerate(counts):
        produce(bootstrap, topic, [(f"k{i}", f"v{i}") for i in range(count)], partition=partition)


def test_implements_ledger_protocols(hook: EoKafkaHook) -> None:
    assert isinstance(hook, OffsetSource)
    assert isinstance(hook, OffsetPublisher)


def test_list_partitions_topics_and_pattern(stack, hook: EoKafkaHook, kafka_topic_factory: Callable) -> None:
    prefix = f"disc{uuid.uuid4().hex[:6]}"
    a = kafka_topic_factory(partitions=2, prefix=prefix)
    other = kafka_topic_factory(partitions=1, prefix="other")
    assert hook.list_partitions([a, other], None) == sorted([(a, 0), (a, 1), (other, 0)])
    assert hook.list_partitions([], rf"{prefix}-.*") == [(a, 0), (a, 1)]
    # a new topic matching the pattern joins at the next call
    b = kafka_topic_factory(partitions=3, prefix=prefix)
    assert hook.list_partitions([], rf"{prefix}-.*") == sorted([(a, 0), (a, 1), (b, 0), (b, 1), (b, 2)])
    # fullmatch, not search: the prefix alone does not match
    assert hook.list_partitions([], prefix) == []


def test_internal_topics_never_match_pattern(stack, hook: EoKafkaHook) -> None:
    internal = f"__eo_internal_{uuid.uuid4().hex[:6]}"
    admin = AdminClient({"bootstrap.servers": stack.kafka_bootstrap})
    admin.create_topics([NewTopic(internal, 1, 1)])[internal].result(timeout=15)
    try:
        listed = hook.list_partitions([], r".*eo_internal.*")
        assert (internal, 0) not in listed
        assert listed == []
    finally:
        admin.delete_topics([internal])[internal].result(timeout=15)


def test_missing_named_topic_is_an_error_naming_it(hook: EoKafkaHook) -> None:
    missing = f"missing-{uuid.uuid4().hex[:8]}"
    with pytest.raises(EoKafkaError, match=f"topic\\(s\\) not found: {missing}"):
        hook.list_partitions([missing], None)


def test_watermarks_and_timestamp_offsets(stack, hook: EoKafkaHook, kafka_topic_factory: Callable) -> None:
    topic = kafka_topic_factory(partitions=3, prefix="wm")
    _fill(stack.kafka_bootstrap, topic, [4, 0, 2])
    tps = [(topic, 0), (topic, 1), (topic, 2)]
    assert hook.watermarks(tps) == {(topic, 0): (0, 4), (topic, 1): (0, 0), (topic, 2): (0, 2)}
    # Timestamp 0 precedes every record: the first offset. (Tansu answers ListOffsets by
    # timestamp with offset 0 for any timestamp, so later timestamps cannot be checked here.)
    assert hook.offsets_for_timestamp(tps, 0) == {(topic, 0): 0, (topic, 1): 0, (topic, 2): 0}
    assert hook.watermarks([]) == {}


def test_commit_offsets_exact_and_read_back(stack, hook: EoKafkaHook, kafka_topic_factory: Callable) -> None:
    topic = kafka_topic_factory(partitions=3, prefix="grp")
    _fill(stack.kafka_bootstrap, topic, [5, 5, 5])
    group = f"g-{uuid.uuid4().hex[:8]}"
    tps = [(topic, 0), (topic, 1), (topic, 2)]
    assert hook.committed_offsets(group, tps) == dict.fromkeys(tps)
    hook.commit_offsets(group, {(topic, 0): 3, (topic, 2): 5})
    assert hook.committed_offsets(group, tps) == {(topic, 0): 3, (topic, 1): None, (topic, 2): 5}
    hook.commit_offsets(group, {(topic, 0): 4})
    assert hook.committed_offsets(group, tps) == {(topic, 0): 4, (topic, 1): None, (topic, 2): 5}
    hook.commit_offsets(group, {})  # nothing to publish: nothing changes
    assert hook.committed_offsets(group, tps) == {(topic, 0): 4, (topic, 1): None, (topic, 2): 5}
    # another group is untouched
    assert hook.committed_offsets(f"{group}-other", tps) == dict.fromkeys(tps)


def test_test_connection(hook: EoKafkaHook, monkeypatch: pytest.MonkeyPatch) -> None:
    ok, message = hook.test_connection()
    assert ok, message
    assert message.startswith("Connected: 1 broker(s)")
    extra = {"bootstrap.servers": "127.0.0.1:1", "eo.timeout.ms": 1500}
    monkeypatch.setenv("AIRFLOW_CONN_EO_KAFKA_DOWN", json.dumps({"conn_type": "eo_kafka", "extra": extra}))
    ok, message = EoKafkaHook(kafka_conn_id="eo_kafka_down").test_connection()
    assert not ok
    assert "eo_kafka_down" in message


def test_tls_settings_reach_librdkafka_and_its_failure_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    """A TLS connection to a plaintext listener: every call fails naming the handshake."""
    with hang_up_listener() as plaintext:
        extra = {"bootstrap.servers": plaintext, "security.protocol": "SSL", "eo.timeout.ms": 3000}
        monkeypatch.setenv("AIRFLOW_CONN_EO_KAFKA_SSL", json.dumps({"conn_type": "kafka", "extra": extra}))
        tls = EoKafkaHook(kafka_conn_id="eo_kafka_ssl")
        with pytest.raises(EoKafkaError) as listing:
            tls.list_partitions(None, ".*")
        with pytest.raises(EoKafkaError) as committing:
            tls.commit_offsets("g-tls", {("t", 0): 1})
        ok, message = tls.test_connection()
    assert str(listing.value).startswith("Kafka connection 'eo_kafka_ssl': cannot list topics: ")
    assert str(committing.value).startswith("commit to group 'g-tls' of t[0]=1: ")
    for text in (str(listing.value), str(committing.value), message):
        assert "(client errors: " in text and "SSL handshake failed" in text, text
    assert not ok


def test_settings_pass_librdkafka_options_and_strip_ours(monkeypatch: pytest.MonkeyPatch) -> None:
    extra = {"bootstrap.servers": "b1:9092", "security.protocol": "SASL_SSL", "eo.timeout.ms": 2500}
    monkeypatch.setenv("AIRFLOW_CONN_EO_KAFKA_TLS", json.dumps({"conn_type": "kafka", "extra": extra}))
    settings = EoKafkaHook(kafka_conn_id="eo_kafka_tls").settings
    assert settings.config == {"bootstrap.servers": "b1:9092", "security.protocol": "SASL_SSL"}
    assert settings.timeout_s == 2.5
