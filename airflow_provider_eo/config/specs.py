"""Typed, immutable pipeline declarations (the result of loading the pipelines YAML).

Every field has the default documented in ``docs/pipelines.md``; objects are only
built by :mod:`airflow_provider_eo.config.parsing`, which validates them.
"""

from __future__ import annotations

import string
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

StartingPolicy = Literal["earliest", "latest", "timestamp"]
NewPartitionPolicy = Literal["earliest", "latest"]
BadRecordPolicy = Literal["fail", "dead_letter"]
DataLossPolicy = Literal["fail", "record_gap"]
DeployMode = Literal["client", "cluster"]
#: How the package reaches a non-local master's driver and executors (docs/spark.md).
PackageShipping = Literal["zip", "installed"]
#: How the write step runs (docs/spark.md "Session mode"): a spark-submit per epoch, or a job
#: on a long-lived Spark Connect server.
SparkMode = Literal["submit", "session"]
#: The Spark Connect connection session mode uses unless ``spark.connect_conn_id`` names another.
DEFAULT_SPARK_CONNECT_CONN_ID = "spark_connect"
RowKeySource = Literal["kafka_key", "template"]

#: HBase's ``hbase.client.keyvalue.maxsize`` default: the largest cell its client sends.
HBASE_KEYVALUE_MAXSIZE = 10_485_760
#: Default byte bound of one HBase write (``batch_bytes``); docs/spark.md "Sizing" says why.
DEFAULT_BATCH_BYTES = 4_194_304


ValueFormat = Literal["json", "string", "bytes", "avro", "protobuf", "json_schema"]
KeyFormat = Literal["bytes", "string", "json", "avro", "protobuf", "json_schema"]
#: Formats whose records carry a schema id of a Schema Registry (Confluent wire format).
REGISTRY_FORMATS = ("avro", "protobuf", "json_schema")
METADATA_FIELDS = ("topic", "partition", "offset", "timestamp", "headers")
#: Metadata an envelope adds (``envelope: debezium``): the op, the whole ``source`` block, or
#: ``source.<path>`` (any field of it).
ENVELOPE_METADATA_FIELDS = ("op", "source")
Envelope = Literal["none", "debezium"]
TruncatePolicy = Literal["fail", "ignore"]


#: Default byte budget of an audit's window index and candidates (``audit.index_budget_bytes``,
#: ``--index-budget-bytes``): 256 MiB.
DEFAULT_INDEX_BUDGET_BYTES = 256 << 20


@dataclass(frozen=True)
class MappingSpec:
    """How a Kafka record becomes HBase cells (``docs/pipelines.md``, ``mapping``).

    ``row_key`` is ``"kafka_key"`` (the record key bytes) or a template over field paths
    such as ``"{customer.id}:{order_id}"`` (``{key}``/``{key.id}``: the decoded Kafka key);
    ``row_key_prefix`` is None, ``"hash:N"`` or ``"salt:N"``. ``columns`` is None (every
    top-level field is a column) or ``{qualifier: dotted.path}``; ``flatten`` lists the
    paths written one cell per element; ``metadata_columns`` maps Kafka metadata
    (topic, partition, offset, timestamp, headers) to qualifiers. ``version`` is
    ``"offset"`` or ``"field:<dotted.path>"``. ``function`` is an optional importable
    ``"pkg.module:function"`` user mapping. ``envelope`` is ``"none"`` or ``"debezium"``
    (change events: ``docs/formats.md``, "Change-data-capture envelopes"), ``truncate`` what
    a truncate event does (``envelope_options.truncate``); ``tombstone_version`` is None,
    ``"header:<name>"`` or ``"key:<path>"`` (where a tombstone's field version comes from).
    The grammars: ``config.mapping_syntax``.
    """

    value_format: ValueFormat = "json"
    key_format: KeyFormat = "bytes"
    row_key: str = "kafka_key"
    row_key_prefix: str | None = None
    columns: dict[str, str] | None = None
    flatten: tuple[str, ...] = ()
    metadata_columns: dict[str, str] = field(default_factory=dict)
    version: str = "offset"
    function: str | None = None
    max_record_bytes: int = 1_048_576
    envelope: Envelope = "none"
    truncate: TruncatePolicy = "fail"
    tombstone_version: str | None = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MappingSpec:
        """The spec ``asdict`` (and a JSON round trip of it) made."""
        return cls(**{**data, "flatten": tuple(data["flatten"])})

    @property
    def row_key_source(self) -> RowKeySource:
        """``kafka_key`` or ``template``."""
        return "kafka_key" if self.row_key == "kafka_key" else "template"

    @property
    def template_fields(self) -> tuple[str, ...]:
        """The field paths the row-key template names, as written (empty for kafka_key)."""
        if self.row_key_source == "kafka_key":
            return ()
        return tuple(name for _, name, _, _ in string.Formatter().parse(self.row_key) if name)

    @property
    def row_key_includes_kafka_key(self) -> bool:
        """True when every row's records share one Kafka key (``kafka_key``, or a template
        naming ``{key}``/``{key.*}``), so the default partitioner keeps a row in one partition."""
        return self.row_key_source == "kafka_key" or any(
            name == "key" or name.startswith("key.") for name in self.template_fields
        )

    @property
    def value_paths(self) -> tuple[str, ...]:
        """Every dotted path into the value the mapping names (columns, template fields,
        the version field), in that order, each once: what a value schema must have. Under
        ``envelope: debezium`` columns and template fields are paths of the ``after`` image
        (``after.<path>``) and the version field a path of the envelope (``source.lsn``)."""
        image = "after." if self.envelope == "debezium" else ""
        paths = [image + path for path in (self.columns or {}).values()]
        paths += [
            image + name for name in self.template_fields if name != "key" and not name.startswith("key.")
        ]
        if self.version_field:
            paths += self.version_field.split("+")
        return tuple(dict.fromkeys(paths))

    @property
    def key_paths(self) -> tuple[str, ...]:
        """The dotted paths into the decoded key the template names (``{key.id}`` -> ``id``)."""
        return tuple(name[4:] for name in self.template_fields if name.startswith("key."))

    @property
    def version_field(self) -> str | None:
        """The dotted path of ``version: field:<path>``, or None for offsets."""
        return self.version.partition(":")[2] if self.version.startswith("field:") else None


@dataclass(frozen=True)
class StartingSpec:
    """Where a partition without history starts.

    ``policy`` applies to a pipeline's first reservation when its consumer group has
    no committed offsets; ``timestamp_ms`` is set iff ``policy == "timestamp"``.
    ``new_partitions`` applies to partitions discovered after the first reservation.
    """

    policy: StartingPolicy = "earliest"
    timestamp_ms: int | None = None
    new_partitions: NewPartitionPolicy = "earliest"


@dataclass(frozen=True)
class CapsSpec:
    """Per-epoch limits; ``None`` means unlimited."""

    max_records_per_partition: int | None = None
    max_records_total: int | None = None


@dataclass(frozen=True)
class TimeoutsSpec:
    """Airflow time limits, so a hung write or a run nobody finishes never holds the
    pipeline's open epoch forever: ``write_minutes`` is the write task's
    ``execution_timeout`` (each try; spark-submit is killed, the retry reuses the epoch),
    ``run_minutes`` the stream DAG's ``dagrun_timeout`` (the scheduler fails the run, the
    next run's recovery aborts its epoch)."""

    write_minutes: int = 60
    run_minutes: int = 240


@dataclass(frozen=True)
class WaitSpec:
    """The stream DAG's deferrable ``wait`` step between recover and reserve: while no
    records are past the cursors it waits in the triggerer (no worker slot, no Spark job),
    checking every ``poll_seconds``; after ``timeout_seconds`` the run skips. ``enabled``
    defaults to whether the pipeline has a ``schedule`` (manual runs answer at once)."""

    enabled: bool = False
    timeout_seconds: int = 3600
    poll_seconds: int = 10


@dataclass(frozen=True)
class AuditSpec:
    """The ``eo_audit__<pipeline>`` DAG's settings: its ``schedule`` (None: runs only when
    triggered) and ``index_budget_bytes``, the byte budget of the audit's window index (the
    Trigger form's default). Audit settings never decide cells, so the mapping digest leaves
    them out."""

    schedule: str | None = None
    index_budget_bytes: int = DEFAULT_INDEX_BUDGET_BYTES


@dataclass(frozen=True)
class SparkResources:
    """Spark resource requests; ``None`` leaves Spark's own default."""

    driver_memory: str | None = None
    driver_cores: int | None = None
    executor_memory: str | None = None
    executor_cores: int | None = None
    num_executors: int | None = None


@dataclass(frozen=True)
class SparkSpec:
    """How the write step is submitted (``SparkSubmitOperator`` settings). ``package``:
    ``zip`` ships the package as a ``--py-files`` zip to any master but ``local``;
    ``installed``: the cluster's Python has it installed, nothing is shipped. ``mode``:
    ``submit`` (a spark-submit per epoch) or ``session`` (a job on the Spark Connect server
    of the ``spark_connect`` connection ``connect_conn_id``; ``master``, ``deploy_mode``,
    ``resources`` and ``conf`` are then the server's business and refused when set)."""

    conf: dict[str, str] = field(default_factory=dict)
    deploy_mode: DeployMode = "client"
    master: str | None = None
    resources: SparkResources = field(default_factory=SparkResources)
    split_size: int = 100_000
    package: PackageShipping = "zip"
    mode: SparkMode = "submit"
    connect_conn_id: str = DEFAULT_SPARK_CONNECT_CONN_ID


@dataclass(frozen=True)
class BackfillSpec:
    """The backfill DAG: ``schedule`` is the cron expression or preset whose data
    intervals Airflow's Backfill dialog replays, one run per interval (the scheduler
    never starts a run by itself). A run's range larger than ``max_records_per_epoch``
    offsets is written as several epochs (chunks) of at most that many (None: one
    epoch), at most ``max_parallel_chunks`` of them at a time."""

    schedule: str = "@daily"
    max_records_per_epoch: int | None = None
    max_parallel_chunks: int = 1


@dataclass(frozen=True)
class DeadLettersSpec:
    """Where a pipeline's dead letters are published (docs/dead_letters.md): ``topic``, a
    Kafka topic that must exist, receives each committed dead letter exactly once."""

    topic: str

    @staticmethod
    def marker_group(group_id: str) -> str:
        """The consumer group whose committed offset on ``(topic, 0)`` is the next
        ``publish_seq`` the topic lacks: ``<group_id>.dead-letters``."""
        return f"{group_id}.dead-letters"


@dataclass(frozen=True)
class PipelineSpec:
    """One declared pipeline: Kafka topics -> one HBase table/column family.

    Exactly one of ``topics`` (non-empty) and ``topic_pattern`` is set. One HBase write
    (a segment) carries at most ``batch_size`` records and ``batch_bytes`` bytes;
    ``hbase_keyvalue_maxsize`` is the cluster's ``hbase.client.keyvalue.maxsize``.
    """

    name: str
    topics: tuple[str, ...]
    topic_pattern: str | None
    group_id: str
    hbase_table: str
    column_family: str
    hbase_keyvalue_maxsize: int = HBASE_KEYVALUE_MAXSIZE
    mapping: MappingSpec = field(default_factory=MappingSpec)
    starting: StartingSpec = field(default_factory=StartingSpec)
    caps: CapsSpec = field(default_factory=CapsSpec)
    bad_records: BadRecordPolicy = "fail"
    dead_letters: DeadLettersSpec | None = None
    on_data_loss: DataLossPolicy = "fail"
    spark: SparkSpec = field(default_factory=SparkSpec)
    timeouts: TimeoutsSpec = field(default_factory=TimeoutsSpec)
    backfill: BackfillSpec = field(default_factory=BackfillSpec)
    wait: WaitSpec = field(default_factory=WaitSpec)
    audit: AuditSpec = field(default_factory=AuditSpec)
    schedule: str | None = None
    batch_size: int = 1000
    batch_bytes: int = DEFAULT_BATCH_BYTES
    source_file: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serializable view of the spec (for logs, the CLI and the write application)."""
        data = asdict(self)
        data["topics"] = list(self.topics)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PipelineSpec:
        """The spec :meth:`to_dict` made (``PipelineSpec.from_dict(s.to_dict()) == s``); not a
        validation of user input: raises KeyError or TypeError for any other mapping."""
        spark = dict(data["spark"])
        nested = {
            "mapping": MappingSpec.from_dict(data["mapping"]),
            "starting": StartingSpec(**data["starting"]),
            "caps": CapsSpec(**data["caps"]),
            "spark": SparkSpec(**{**spark, "resources": SparkResources(**spark["resources"])}),
            "timeouts": TimeoutsSpec(**data["timeouts"]),
            "backfill": BackfillSpec(**data["backfill"]),
            "wait": WaitSpec(**data["wait"]),
            "audit": AuditSpec(**data.get("audit", {})),  # absent from specs recorded before it
            "dead_letters": None
            if data.get("dead_letters") is None
            else DeadLettersSpec(**data["dead_letters"]),
        }
        return cls(**{**data, **nested, "topics": tuple(data["topics"])})
