"""The fetch response size a Kafka connection allows, as librdkafka derives it."""

from __future__ import annotations

import pytest

from airflow_provider_eo.config.size_limits import receive_message_max_bytes


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ({}, 100_000_000),  # librdkafka's default
        ({"fetch.max.bytes": "52428800"}, 100_000_000),
        ({"fetch.max.bytes": 200_000_000}, 200_000_512),  # raised to fetch.max.bytes + 512
        # an explicit value wins
        ({"receive.message.max.bytes": "3000000", "fetch.max.bytes": 200_000_000}, 3_000_000),
    ],
)
def test_receive_message_max_bytes_as_librdkafka_derives_it(config: dict[str, object], expected: int) -> None:
    assert receive_message_max_bytes(config) == expected
