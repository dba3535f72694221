"""The range reader's librdkafka settings: forced ones, defaults and a byte-bounded pre-fetch."""

from __future__ import annotations

from airflow_provider_eo.spark.task.range_reader import consumer_config


def test_prefetch_is_bounded_in_bytes_unless_the_connection_says_otherwise() -> None:
    config = consumer_config({"bootstrap.servers": "k:9092"}, queue_bytes=8 * 2**20 + 1)
    assert config["queued.max.messages.kbytes"] == "8193"  # rounded up to KiB
    assert config["fetch.queue.backoff.ms"] == "10"
    assert (config["isolation.level"], config["enable.auto.commit"]) == ("read_committed", "false")
    assert config["group.id"].startswith("eo-range-reader-")
    mine = {"bootstrap.servers": "k", "queued.max.messages.kbytes": "65536", "fetch.queue.backoff.ms": "100"}
    config = consumer_config(mine, queue_bytes=1024)
    assert (config["queued.max.messages.kbytes"], config["fetch.queue.backoff.ms"]) == ("65536", "100")
    assert "queued.max.messages.kbytes" not in consumer_config({"bootstrap.servers": "k"})
