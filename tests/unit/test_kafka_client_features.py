"""What a Kafka connection needs of librdkafka, and the installed wheel's answer (no broker)."""

from __future__ import annotations

import pytest

from airflow_provider_eo.clients.connection_settings import kafka_client_config
from airflow_provider_eo.clients.connections import EoConnection
from airflow_provider_eo.clients.kafka_client_features import (
    KafkaFeatureMissing,
    build_features,
    check_client_features,
    required_features,
)


@pytest.mark.parametrize(
    ("config", "needed"),
    [
        ({}, {}),
        ({"security.protocol": "SSL"}, {"ssl": "security.protocol=SSL"}),
        (
            {"security.protocol": "sasl_ssl", "sasl.mechanism": "SCRAM-SHA-512"},
            {"ssl": "security.protocol=SASL_SSL", "sasl_scram": "sasl.mechanism=SCRAM-SHA-512"},
        ),
        (
            {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanisms": "PLAIN"},
            {"sasl_plain": "sasl.mechanisms=PLAIN"},
        ),
        (
            {"security.protocol": "SASL_PLAINTEXT"},
            {"sasl_gssapi": "sasl.mechanism=GSSAPI"},
        ),  # librdkafka's default
        (
            {
                "security.protocol": "SASL_SSL",
                "sasl.mechanism": "OAUTHBEARER",
                "sasl.oauthbearer.method": "oidc",
            },
            {
                "ssl": "security.protocol=SASL_SSL",
                "sasl_oauthbearer": "sasl.mechanism=OAUTHBEARER",
                "oidc": "sasl.oauthbearer.method=oidc",
            },
        ),
    ],
)
def test_required_features(config: dict[str, str], needed: dict[str, str]) -> None:
    assert required_features(config) == needed


def test_the_wheel_speaks_scram_and_oidc_but_not_gssapi() -> None:
    assert "sasl_gssapi" not in build_features()
    assert {"ssl", "sasl_scram", "sasl_oauthbearer", "oidc"} <= set(build_features())
    oidc = {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "OAUTHBEARER",
        "sasl.oauthbearer.method": "oidc",
    }
    assert check_client_features("eo_kafka", oidc) is None
    conn = EoConnection(
        conn_id="kerberized",
        extra={"bootstrap.servers": "b:9092", "security.protocol": "SASL_SSL", "sasl.mechanism": "GSSAPI"},
    )
    start = r"^Kafka connection 'kerberized': sasl.mechanism=GSSAPI needs librdkafka feature 'sasl_gssapi'"
    with pytest.raises(KafkaFeatureMissing, match=start) as refused:
        kafka_client_config(conn)
    assert (refused.value.conn_id, refused.value.feature, refused.value.have) == (
        "kerberized", "sasl_gssapi", build_features()
    )  # fmt: skip


def test_a_connection_that_needs_no_feature_builds_no_probe_client() -> None:
    """PLAINTEXT without SASL needs nothing of the build: the probe clients are not made."""
    build_features.cache_clear()
    check_client_features("eo_kafka", {"bootstrap.servers": "b:9092"})
    assert build_features.cache_info().misses == 0
