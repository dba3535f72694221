"""Stack self-check: every local service answers a real request.

``python -m eo_devtools.stack.selfcheck [--state-dir DIR] [--keep]``
starts the stack when needed, runs one real request per service (SQL ``select 1``,
a Kafka produce/consume round trip, an HBase ``tables()`` call, an Avro schema registered
and fetched by id through the Schema Registry, a trivial spark-submit), prints one line
per check and exits 1 when any fails. A stack it started is stopped afterwards unless
``--keep``; a stack already running is left as is.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path

import happybase
import psycopg2
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient

from eo_devtools.stack.cli import default_state_dir
from eo_devtools.stack.connections import spark_connection
from eo_devtools.stack.stack import LocalStack

SPARK_JOB = """
from pyspark.sql import SparkSession
spark = SparkSession.builder.appName("eo-selfcheck").getOrCreate()
print("EO-SELFCHECK", spark.sparkContext.parallelize(range(1, 101), 2).map(lambda x: x * x).sum())
spark.stop()
"""


def check_postgres(stack: LocalStack) -> str:
    with psycopg2.connect(stack.ledger_dsn, connect_timeout=5) as conn, conn.cursor() as cur:
        cur.execute("select 1, current_database()")
        row = cur.fetchone()
    conn.close()
    if row != (1, "eo"):
        raise RuntimeError(f"unexpected answer {row!r}")
    return "select 1 in database eo"


def check_kafka(stack: LocalStack) -> str:
    topic = f"eo-selfcheck-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": stack.kafka_bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=1)])[topic].result(timeout=15)
    try:
        producer = Producer({"bootstrap.servers": stack.kafka_bootstrap, "linger.ms": 0})
        producer.produce(topic, key=b"k", value=b"hello")
        if producer.flush(15):
            raise RuntimeError(f"record to {topic} not delivered")
        consumer = Consumer({"bootstrap.servers": stack.kafka_bootstrap, "group.id": topic})
        try:
            consumer.assign([TopicPartition(topic, 0, 0)])
            msg = consumer.poll(15)
        finally:
            consumer.close()
        if msg is None or msg.error() or msg.value() != b"hello":
            raise RuntimeError(
                f"read back {msg and (msg.error() or msg.value())!r} from {topic}, expected b'hello'"
            )
    finally:
        admin.delete_topics([topic])[topic].result(timeout=15)
    return f"produced and consumed 1 record via {stack.kafka_bootstrap}"


def check_hbase(stack: LocalStack) -> str:
    connection = happybase.Connection(stack.hbase_host, stack.hbase_port, timeout=10000)
    try:
        tables = connection.tables()
    finally:
        connection.close()
    return f"tables() answered ({len(tables)} tables)"


def check_schema_registry(stack: LocalStack) -> str:
    subject = f"eo-selfcheck-{uuid.uuid4().hex[:8]}-value"
    text = '{"type":"record","name":"SelfCheck","fields":[{"name":"n","type":"long"}]}'
    client = SchemaRegistryClient({"url": stack.schema_registry_url})
    schema_id = client.register_schema(subject, Schema(text, "AVRO"))
    try:
        fetched = SchemaRegistryClient({"url": stack.schema_registry_url}).get_schema(schema_id)
        if fetched.schema_str != text:
            raise RuntimeError(f"schema id {schema_id} came back as {fetched.schema_str!r}")
        level = client.get_compatibility()
    finally:
        client.delete_subject(subject)
        client.delete_subject(subject, permanent=True)
    return f"Avro schema id {schema_id} registered and fetched via {stack.schema_registry_url} ({level})"


def check_spark(_stack: LocalStack) -> str:
    master = json.loads(spark_connection())["host"]
    spark_submit = Path(sys.executable).parent / "spark-submit"
    with tempfile.TemporaryDirectory(prefix="eo-selfcheck-") as tmp:
        app = Path(tmp) / "job.py"
        app.write_text(SPARK_JOB)
        argv = [str(spark_submit), "--master", master, "--conf", "spark.ui.enabled=false", str(app)]
        result = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False)
    if "EO-SELFCHECK 338350" not in result.stdout.splitlines():
        raise RuntimeError(f"spark-submit exit {result.returncode}: {result.stderr[-1500:]}")
    return f"spark-submit --master {master}: sum of squares 1..100 = 338350"


CHECKS: Sequence[tuple[str, Callable[[LocalStack], str]]] = (
    ("postgres", check_postgres),
    ("kafka", check_kafka),
    ("hbase", check_hbase),
    ("registry", check_schema_registry),
    ("spark", check_spark),
)


def run_checks(stack: LocalStack) -> bool:
    """Run every check, print ``name: OK|FAILED detail``; True when none failed."""
    ok = True
    for name, check in CHECKS:
        try:
            print(f"{name:9s} OK      {check(stack)}", flush=True)
        except Exception as exc:
            ok = False
            print(f"{name:9s} FAILED  {type(exc).__name__}: {exc}", flush=True)
    return ok


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m eo_devtools.stack.selfcheck")
    parser.add_argument("--state-dir", type=Path, default=None)
    parser.add_argument("--keep", action="store_true", help="leave a stack this command started running")
    args = parser.parse_args(argv)
    stack = LocalStack(args.state_dir or default_state_dir())
    was_up = stack.is_up() if (stack.state_dir / "stack.json").exists() else False
    print(f"local stack in {stack.state_dir}: {'already running' if was_up else 'starting'}", flush=True)
    stack.up()
    try:
        ok = run_checks(stack)
    finally:
        if not was_up and not args.keep:
            stack.down()
            print("local stack stopped (use --keep or eo-stack up to keep it running)")
    print("self-check passed" if ok else "self-check FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
