"""EoKafkaHook against the real local broker (Apache Kafka): discovery, watermarks,
timestamp lookups, group offsets and how a failed TLS handshake is reported."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from airflow_provider_eo.hooks.kafka import EoKafkaError, EoKafkaHook
from airflow_provider_eo.ledger.model.offsets import OffsetPublisher, OffsetSource
from tests.conftest import StackInfo
from tests.kafka_helpers import delete_records_before, produce, recent_timestamp_ms

pytestmark = pytest.mark.integration


@pytest.fixture
def hook(stack: StackInfo, monkeypatch: pytest.MonkeyPatch) -> EoKafkaHook:
    for name, value in stack.conn_env.items():
        monkeypatch.setenv(name, value)
    return EoKafkaHook()


def _fill(bootstrap: str, topic: str, counts: list[int]) -> None:
    for partition, count in enumerate(counts):
        produce(bootstrap, topic, [(f"k{i}", f"v{i}") for i in range(count)], partition=partition)


def test_implements_ledger_protocols(hook: EoKafkaHook) -> None:
    assert isinstance(hook, OffsetSource)
    assert isinstance(hook, OffsetPublisher)


def test_list_partitions_topics_and_pattern(
    stack: StackInfo, hook: EoKafkaHook, kafka_topic_factory: Callable[..., str]
) -> None:
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


def test_internal_topics_never_match_pattern(stack: StackInfo, hook: EoKafkaHook) -> None:
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


class CountingHook(EoKafkaHook):
    """The hook, counting the admin clients it creates."""

    created = 0

    def _new_admin(self) -> AdminClient:
        self.created += 1
        return super()._new_admin()


def test_reads_in_one_admin_client_block_share_one_client(
    stack: StackInfo, hook: EoKafkaHook, kafka_topic_factory: Callable[..., str]
) -> None:
    counting = CountingHook()
    topic = kafka_topic_factory(partitions=2)
    _fill(stack.kafka_bootstrap, topic, [3, 1])
    with counting.one_admin_client() as kafka, kafka.one_admin_client():  # nested: the outer client
        tps = kafka.list_partitions([topic], None)
        assert kafka.watermarks(tps) == {(topic, 0): (0, 3), (topic, 1): (0, 1)}
        assert counting.created == 1
        kafka.commit_offsets(f"g-{topic}", {(topic, 0): 2})  # a commit has a client of its own
        assert counting.created == 2
    assert kafka.committed_offsets(f"g-{topic}", tps) == {(topic, 0): 2, (topic, 1): None}
    kafka.list_partitions([topic], None)
    kafka.watermarks(tps)
    assert counting.created == 4  # outside the block: a client per read
    with counting.one_admin_client():
        kafka.watermarks(tps)
    assert counting.created == 5  # a new block, a new client


def test_watermarks_and_timestamp_offsets(
    stack: StackInfo, hook: EoKafkaHook, kafka_topic_factory: Callable[..., str]
) -> None:
    """Records with explicit CreateTimes, several per (lz4) batch: each lookup answers the
    first offset whose timestamp is >= the time, or the high watermark when none is."""
    topic = kafka_topic_factory(partitions=3, prefix="wm")
    t0 = recent_timestamp_ms()
    records = [(f"k{i}", f"v{i}") for i in range(4)]
    produce(stack.kafka_bootstrap, topic, records, partition=0, timestamps=[t0 + 1000 * i for i in range(4)])
    produce(stack.kafka_bootstrap, topic, records[:2], partition=2, timestamps=[t0 + 500, t0 + 5000])
    tps = [(topic, 0), (topic, 1), (topic, 2)]
    assert hook.watermarks(tps) == {(topic, 0): (0, 4), (topic, 1): (0, 0), (topic, 2): (0, 2)}

    def lookup(ts_ms: int) -> list[int]:
        found = hook.offsets_for_timestamp(tps, ts_ms)
        assert sorted(found) == tps
        return [found[tp] for tp in tps]

    assert lookup(0) == [0, 0, 0]
    assert lookup(t0) == [0, 0, 0]
    assert lookup(t0 + 1000) == [1, 0, 1]  # a record stamped exactly at the time is the answer
    assert lookup(t0 + 1500) == [2, 0, 1]
    assert lookup(t0 + 3000) == [3, 0, 1]
    assert lookup(t0 + 4000) == [4, 0, 1]  # after every record of partition 0: its high watermark
    assert lookup(t0 + 5001) == [4, 0, 2]
    assert hook.offsets_for_timestamp([], t0) == {}
    assert hook.watermarks([]) == {}


def test_watermarks_and_lookups_after_delete_records(
    stack: StackInfo, hook: EoKafkaHook, kafka_topic_factory: Callable[..., str]
) -> None:
    topic = kafka_topic_factory(partitions=2, prefix="wmdel")
    t0 = recent_timestamp_ms()
    produce(
        stack.kafka_bootstrap, topic, [("k", "v")] * 6, partition=1, timestamps=[t0 + i for i in range(6)]
    )
    assert delete_records_before(stack.kafka_bootstrap, topic, 1, 4) == 4
    assert hook.watermarks([(topic, 0), (topic, 1)]) == {(topic, 0): (0, 0), (topic, 1): (4, 6)}
    # deleted records are not found by time: the first record still held answers
    assert hook.offsets_for_timestamp([(topic, 1)], t0) == {(topic, 1): 4}
    assert hook.offsets_for_timestamp([(topic, 1)], t0 + 5) == {(topic, 1): 5}


def test_commit_offsets_exact_and_read_back(
    stack: StackInfo, hook: EoKafkaHook, kafka_topic_factory: Callable[..., str]
) -> None:
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


def test_tls_settings_reach_librdkafka_and_its_failure_is_named(
    stack: StackInfo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """TLS to the broker's PLAINTEXT listener: the broker hangs up on the ClientHello and
    every call fails naming the handshake. (librdkafka words it "SSL handshake failed:
    Disconnected: SSL connection closed by peer: connecting to a PLAINTEXT broker listener?
    (after 1ms in state SSL_HANDSHAKE)" or, now and then, just "Disconnected: SSL
    connection closed by peer (after 1ms in state SSL_HANDSHAKE)".)"""
    extra = {"bootstrap.servers": stack.kafka_bootstrap, "security.protocol": "SSL", "eo.timeout.ms": 3000}
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
        assert "(client errors: " in text, text
        assert "SSL connection closed by peer" in text and "in state SSL_HANDSHAKE" in text, text
    assert not ok


def test_settings_pass_librdkafka_options_and_strip_ours(monkeypatch: pytest.MonkeyPatch) -> None:
    # a mechanism this build has (without one, librdkafka defaults to GSSAPI: refused)
    sasl = {"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512"}
    extra = {"bootstrap.servers": "b1:9092", **sasl, "eo.timeout.ms": 2500}
    monkeypatch.setenv("AIRFLOW_CONN_EO_KAFKA_TLS", json.dumps({"conn_type": "kafka", "extra": extra}))
    settings = EoKafkaHook(kafka_conn_id="eo_kafka_tls").settings
    assert settings.config == {"bootstrap.servers": "b1:9092", **sasl, "reconnect.backoff.ms": "10"}
    assert settings.timeout_s == 2.5
