"""The Spark audit (``audit_application.py`` through ``spark-submit``, the audit DAG's
path) when a range cannot be audited: the pipeline reads two topics; one is deleted
before the audit. Its range's Spark task reports it (``range_unreadable`` naming topic,
partition, range and Kafka's error); the other topic's range is audited clean; the audit
is stored with verdict ``discrepancies`` and exits 0 (the DAG's verdict task fails it),
instead of the job failing with nothing stored or the window reported clean.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient

from airflow_provider_eo.ledger import Ledger
from tests.conftest import StackInfo
from tests.integration.dead_letter_support import dead_letter_world
from tests.integration.epoch_round_trip import kafka_connection
from tests.integration.ledger_support import fresh_database
from tests.integration.spark_submit import spark_env, submit_audit
from tests.kafka_helpers import created_topic, produce

pytestmark = pytest.mark.integration

KEPT = [(f"a{i}", f'{{"name":"a{i}"}}'.encode()) for i in range(4)]
GONE = [(f"b{i}", f'{{"name":"b{i}"}}'.encode()) for i in range(3)]


def test_a_range_whose_topic_is_gone_is_reported_by_its_spark_task_and_stored(
    stack: StackInfo, tmp_path: Path
) -> None:
    with (
        fresh_database(stack.ledger_dsn) as dsn,
        created_topic(stack.kafka_bootstrap, prefix="audit-kept") as kept,
        created_topic(stack.kafka_bootstrap, prefix="audit-gone") as gone,
        dead_letter_world(stack, dsn, batch_size=2, topics=[kept, gone]) as world,
    ):
        produce(stack.kafka_bootstrap, kept, KEPT, partition=0)
        produce(stack.kafka_bootstrap, gone, GONE, partition=0)
        epoch = world.trip.run_stream_epoch()
        assert epoch is not None and world.trip.run_stream_epoch() is None
        assert sorted((r.topic, r.start, r.end) for r in epoch.ranges) == sorted([(kept, 0, 4), (gone, 0, 3)])
        file = tmp_path / "pipelines.yaml"
        entry = {
            "name": world.spec.name, "topics": [kept, gone], "hbase": {"table": world.spec.hbase_table},
            "bad_records": "dead_letter", "dead_letters": {"topic": world.dlq}, "batch_size": 2,
        }  # fmt: skip
        file.write_text(json.dumps({"pipelines": [entry]}))
        admin = AdminClient({"bootstrap.servers": stack.kafka_bootstrap})
        admin.delete_topics([gone])[gone].result(timeout=15)

        env = spark_env({**world.trip.env, "AIRFLOW_CONN_EO_KAFKA": kafka_connection(
            stack.kafka_bootstrap, {"eo.timeout.ms": 3000}
        )})  # fmt: skip
        run_key = f"eo_audit__{world.spec.name}/gone-topic"
        done = submit_audit(file, world.spec.name, str(epoch.epoch_id), run_key, env)
        assert done.returncode == 0, done.output[-4000:]

        with Ledger(dsn) as ledger:
            record = ledger.audit_of_run(run_key)
        assert record is not None
        summary = (record.source, record.verdict, record.epoch_ids)
        assert summary == ("dag", "discrepancies", (epoch.epoch_id,))
        assert record.summary["offsets"] == {
            "ranges": 1, "offsets": 4, "records_written": 4, "dead_letters": 0, "skipped_offsets": 0,
        }  # fmt: skip
        assert record.summary["cells"] == {
            "verified": 4, "covered_by_newer": 0, "deletes_verified": 0, "later_data": 0,
        }  # fmt: skip
        assert (record.findings_total, record.summary["findings_by_kind"]) == (
            2,
            {"range_unreadable": 1, "group_behind": 1},
        )
        where = [(f["kind"], f["epoch_id"], f["topic"], f["partition"], f["offset"]) for f in record.findings]
        assert where == [
            ("range_unreadable", epoch.epoch_id, gone, 0, 0),
            ("group_behind", epoch.epoch_id, gone, 0, 3),  # the group's offsets went with the topic
        ]
        assert record.findings[0]["detail"] == (
            f"cannot read {gone} partition 0 up to end offset 3: reached offset 0 (range [0, 3)): "
            f"no progress for 3 s: topic {gone!r} does not exist (deleted after the reservation?)"
        )
