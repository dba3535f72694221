"""Validation of one pipeline mapping into a :class:`PipelineSpec`.

Each ``parse_*`` function reads one YAML section through :class:`Section`, checks every
field and rejects unknown keys; the first problem raises ``PipelineConfigError``.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime
from typing import Any

from airflow_provider_eo.config.mapping_parsing import parse_mapping
from airflow_provider_eo.config.scheduling import (
    parse_audit,
    parse_backfill,
    parse_schedule,
    parse_timeouts,
    parse_wait,
)
from airflow_provider_eo.config.section import Section
from airflow_provider_eo.config.size_limits import MAX_BATCH_BYTES, check_pipeline_sizes
from airflow_provider_eo.config.specs import (
    DEFAULT_BATCH_BYTES,
    DEFAULT_SPARK_CONNECT_CONN_ID,
    HBASE_KEYVALUE_MAXSIZE,
    CapsSpec,
    DeadLettersSpec,
    PipelineSpec,
    SparkResources,
    SparkSpec,
    StartingSpec,
)

NAME_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")
#: DAG ids ``eo_backfill__<name>`` must stay within Airflow's 250 characters.
MAX_NAME_LENGTH = 200
#: Kafka's rule for topic names (``org.apache.kafka.common.internals.Topic``).
TOPIC_RE = re.compile(r"^[A-Za-z0-9._-]{1,249}$")
#: HBase's rule for table names: ``[namespace:]qualifier`` (``TableName.isLegal*``).
TABLE_RE = re.compile(r"^(?:[A-Za-z0-9_]+:)?[A-Za-z0-9_][A-Za-z0-9_.-]*$")
#: HBase's rule for column families: no ':', '/' or '\\', not starting with '.'.
FAMILY_ILLEGAL = re.compile(r"^\.|[:/\\]")
#: librdkafka's ``consume()`` takes at most 1M messages; a segment is one Thrift call.
MAX_BATCH_SIZE = 1_000_000
MEMORY_RE = re.compile(r"^\d+[kmgtKMGT]?$")
#: What ``spark-submit --master`` accepts: local modes, standalone (HA lists too), YARN, Kubernetes.
MASTER_RE = re.compile(r"^(local(\[(\*|\d+)(,\d+)?\])?|spark://\S+|yarn|k8s://\S+)$")


def parse_pipeline(section: Section) -> PipelineSpec:
    """Build a spec from one ``pipelines`` entry (``section.pipeline`` is its name)."""
    name = section.pipeline or ""
    section.raw("name")
    topics, pattern = _parse_topics(section)
    hbase = section.child("hbase")
    table = hbase.string("table")
    if not TABLE_RE.fullmatch(table):
        rule = "[namespace:]name of letters, digits, '_', '.', '-'"
        hbase.fail("table", f"must be an HBase table name ({rule}), got {table!r}")
    family = hbase.string("column_family", "d")
    if FAMILY_ILLEGAL.search(family) or family == "recovered.edits":
        rule = "no ':', '/' or '\\', not starting with '.'"
        hbase.fail("column_family", f"must be an HBase column family name ({rule}), got {family!r}")
    keyvalue_maxsize = hbase.integer("keyvalue_maxsize", HBASE_KEYVALUE_MAXSIZE)
    hbase.finish()
    spec = PipelineSpec(
        name=name,
        topics=topics,
        topic_pattern=pattern,
        group_id=section.string("group_id", f"eo-{name}"),
        hbase_table=table,
        column_family=family,
        hbase_keyvalue_maxsize=keyvalue_maxsize,
        mapping=parse_mapping(section.child("mapping")),
        starting=_parse_starting(section.child("starting")),
        caps=_parse_caps(section.child("caps")),
        bad_records=section.choice("bad_records", ("fail", "dead_letter"), "fail"),
        dead_letters=_parse_dead_letters(section),
        on_data_loss=section.choice("on_data_loss", ("fail", "record_gap"), "fail"),
        spark=_parse_spark(section.child("spark")),
        timeouts=parse_timeouts(section.child("timeouts")),
        backfill=parse_backfill(section.child("backfill")),
        wait=parse_wait(section),
        audit=parse_audit(section.child("audit")),
        schedule=parse_schedule(section),
        batch_size=section.integer("batch_size", 1000, maximum=MAX_BATCH_SIZE),
        batch_bytes=section.integer("batch_bytes", DEFAULT_BATCH_BYTES, maximum=MAX_BATCH_BYTES),
        source_file=section.file,
    )
    section.finish()
    check_pipeline_sizes(spec)
    return spec


def _parse_topics(section: Section) -> tuple[tuple[str, ...], str | None]:
    topics = section.raw("topics", None)
    pattern = section.raw("topic_pattern", None)
    if (topics is None) == (pattern is None):
        section.fail("topics", "exactly one of 'topics' and 'topic_pattern' must be given")
    if pattern is not None:
        if not isinstance(pattern, str) or not pattern:
            section.fail("topic_pattern", f"must be a non-empty string, got {pattern!r}")
        try:
            re.compile(pattern)
        except re.error as exc:
            section.fail("topic_pattern", f"is not a valid regular expression: {exc}")
        return (), pattern
    if not isinstance(topics, list) or not topics:
        section.fail("topics", f"must be a non-empty list of topic names, got {topics!r}")
    for index, topic in enumerate(topics):
        if not isinstance(topic, str) or not topic.strip():
            section.fail(f"topics[{index}]", f"must be a non-empty string, got {topic!r}")
        if not TOPIC_RE.fullmatch(topic) or topic in (".", ".."):
            section.fail(
                f"topics[{index}]",
                f"must be a Kafka topic name (at most 249 letters, digits, '.', '_', '-'), got {topic!r}",
            )
    if len(set(topics)) != len(topics):
        section.fail("topics", "lists a topic more than once")
    return tuple(topics), None


def _parse_dead_letters(section: Section) -> DeadLettersSpec | None:
    """``dead_letters: {topic: T}`` (optional); needs ``bad_records: dead_letter``."""
    if section.raw("dead_letters", None) is None:
        return None
    child = section.child("dead_letters")
    topic = child.string("topic")
    if not TOPIC_RE.fullmatch(topic) or topic in (".", ".."):
        child.fail(
            "topic", f"must be a Kafka topic name (at most 249 letters, digits, '.', '_', '-'), got {topic!r}"
        )
    child.finish()
    if section.raw("bad_records", "fail") != "dead_letter":
        section.fail(
            "dead_letters", "needs bad_records: dead_letter (with 'fail' no record is dead-lettered)"
        )
    return DeadLettersSpec(topic)


def _parse_starting(section: Section) -> StartingSpec:
    policy = section.choice("policy", ("earliest", "latest", "timestamp"), "earliest")
    raw_ts = section.raw("timestamp", None)
    if policy == "timestamp" and raw_ts is None:
        section.fail("timestamp", "is required when policy is 'timestamp'")
    if policy != "timestamp" and raw_ts is not None:
        section.fail("timestamp", f"is only allowed when policy is 'timestamp' (policy is {policy!r})")
    spec = StartingSpec(
        policy=policy,
        timestamp_ms=None if raw_ts is None else _timestamp_ms(section, raw_ts),
        new_partitions=section.choice("new_partitions", ("earliest", "latest"), "earliest"),
    )
    section.finish()
    return spec


def _timestamp_ms(section: Section, value: Any) -> int:
    """Epoch milliseconds from an int, an ISO-8601 string or a YAML date/datetime (naive = UTC)."""
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 0:
            section.fail("timestamp", f"must be >= 0 epoch milliseconds, got {value}")
        return value
    moment: datetime
    if isinstance(value, datetime):
        moment = value
    elif isinstance(value, date):
        moment = datetime(value.year, value.month, value.day)
    elif isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value)
        except ValueError:
            section.fail("timestamp", f"must be ISO-8601 or epoch milliseconds, got {value!r}")
    else:
        section.fail("timestamp", f"must be ISO-8601 or epoch milliseconds, got {value!r}")
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)


def _parse_caps(section: Section) -> CapsSpec:
    spec = CapsSpec(
        max_records_per_partition=section.integer("max_records_per_partition", None),
        max_records_total=section.integer("max_records_total", None),
    )
    section.finish()
    return spec


def _parse_spark(section: Section) -> SparkSpec:
    conf = section.raw("conf", {})
    if not isinstance(conf, dict):
        section.fail("conf", f"must be a mapping of Spark properties, got {type(conf).__name__}")
    for key, value in conf.items():
        if not isinstance(key, str) or not isinstance(value, str | int | float | bool):
            section.fail(f"conf.{key}", f"must map a property name to a scalar, got {value!r}")
    deploy_mode = section.choice("deploy_mode", ("client", "cluster"), "client")
    master = section.string("master", None)
    if master is not None and not MASTER_RE.fullmatch(master):
        section.fail(
            "master", f"must be a Spark master URL (local[N], spark://, yarn, k8s://), got {master!r}"
        )
    if deploy_mode == "cluster" and master is not None and master.startswith("spark://"):
        section.fail(
            "deploy_mode",
            f"'cluster' with master {master!r}: Spark runs Python applications on a standalone "
            "cluster in client deploy mode only (cluster mode needs YARN)",
        )
    if deploy_mode == "cluster" and master is not None and master.startswith("k8s://"):
        section.fail(
            "deploy_mode",
            f"'cluster' with master {master!r}: on Kubernetes the driver's connections would be "
            "written into the driver pod's spec; use client deploy mode (docs/operators.md)",
        )
    res = section.child("resources")
    resources = SparkResources(
        driver_memory=_memory(res, "driver_memory"),
        driver_cores=res.integer("driver_cores", None),
        executor_memory=_memory(res, "executor_memory"),
        executor_cores=res.integer("executor_cores", None),
        num_executors=res.integer("num_executors", None),
    )
    res.finish()
    spec = SparkSpec(
        conf={key: _conf_value(value) for key, value in conf.items()},
        deploy_mode=deploy_mode,
        master=master,
        resources=resources,
        split_size=section.integer("split_size", 100_000),
        package=section.choice("package", ("zip", "installed"), "zip"),
        mode=section.choice("mode", ("submit", "session"), "submit"),
        connect_conn_id=section.string("connect_conn_id", DEFAULT_SPARK_CONNECT_CONN_ID),
    )
    if spec.mode == "session":
        _check_session_mode(section, spec)
    section.finish()
    return spec


def _check_session_mode(section: Section, spec: SparkSpec) -> None:
    """In session mode the Connect server owns master, deploy mode, resources and conf:
    a setting of those would be silently ignored, so it is refused."""
    if spec.master is not None:
        section.fail("master", "is the Spark Connect server's in mode 'session'; remove it")
    if spec.deploy_mode != "client":
        section.fail("deploy_mode", "must be 'client' (or absent) in mode 'session'")
    if spec.resources != SparkResources():
        section.fail("resources", "are the Spark Connect server's in mode 'session'; remove them")
    if spec.conf:
        section.fail("conf", "is not sent in mode 'session' (no session-wide settings); remove it")


def _conf_value(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def _memory(section: Section, key: str) -> str | None:
    value = section.raw(key, None)
    if value is None:
        return None
    if not isinstance(value, str) or not MEMORY_RE.fullmatch(value):
        section.fail(key, f"must be a JVM memory size such as '2g' or '512m', got {value!r}")
    return value
