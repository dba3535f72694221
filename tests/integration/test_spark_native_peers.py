"""The benchmark's peers (benchmarks/spark_native_peers.py): Spark's own Kafka source, read
as one bounded range (``spark.read``) and with ``Trigger.AvailableNow`` and a fresh
checkpoint, writing with happybase ``Table.batch`` from ``foreachPartition``, leave exactly
the cells the write step leaves for the same records (every row, every column, every value),
and each peer writes every record of the topic once. That is what makes the ``spark_native``
benchmark's ratios compare equal work. Spark's Kafka connector comes from setup's JVM cache
(spark-sql-kafka-0-10 4.2.0 under pyspark 4.3.0).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from benchmarks.dataset import Dataset, delete_topic, produce_dataset
from benchmarks.spark_native_peers import check_same_cells
from eo_devtools.stack.stack import LocalStack
from tests.conftest import StackInfo
from tests.spark_startup import spark_conf

pytestmark = [pytest.mark.integration, pytest.mark.spark]

RECORDS, PARTITIONS = 600, 3


@pytest.fixture
def dataset(stack: StackInfo) -> Iterator[Dataset]:
    made = produce_dataset(stack.kafka_bootstrap, RECORDS, PARTITIONS)
    yield made
    delete_topic(stack.kafka_bootstrap, made.topic)


def test_both_peers_leave_exactly_the_write_steps_cells(stack: StackInfo, dataset: Dataset) -> None:
    result = check_same_cells(LocalStack(stack.state_dir), dataset, conf=spark_conf())
    # 600 records of 600 users (one row each), 9 top-level fields each: one cell per field
    assert result == {"records": 600, "rows": 600, "cells": 5400, "batch": True, "available_now": True}
