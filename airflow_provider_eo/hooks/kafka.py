"""Kafka hook: partition discovery, watermarks and consumer-group offsets.

Implements the ledger's ``OffsetSource`` and ``OffsetPublisher`` protocols. The
connection has the official Kafka provider's shape: ``extra`` holds librdkafka
settings (see :func:`~airflow_provider_eo.clients.connection_settings.kafka_client_config`),
so TLS/SASL settings reach every client this hook creates.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager

from confluent_kafka import (
    Consumer,
    KafkaError,
)
from confluent_kafka.admin import AdminClient

from airflow_provider_eo.clients.connection_settings import KafkaClientConfig, kafka_client_config
from airflow_provider_eo.clients.connections import DEFAULT_KAFKA_CONN_ID
from airflow_provider_eo.clients.dead_letter_topic import DeadLetterTopic
from airflow_provider_eo.clients.kafka_errors import ClientErrorLog, EoKafkaError
from airflow_provider_eo.clients.kafka_group_offsets import GroupOffsets
from airflow_provider_eo.clients.kafka_offset_reads import (
    list_partitions,
    new_admin,
    offsets_for_timestamp,
    read_consumer,
)
from airflow_provider_eo.clients.kafka_watermarks import TP, WatermarkReader
from airflow_provider_eo.config.specs import PipelineSpec
from airflow_provider_eo.hooks.base import EoHook


def _unknown_topic(error: object) -> bool:
    return isinstance(error, KafkaError) and error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART


_PROBE_GROUP = "airflow-provider-eo-probe"  # never committed to: used only for reads


class EoKafkaHook(EoHook):
    """Kafka access for reservation and commit (OffsetSource + OffsetPublisher).

    :param kafka_conn_id: connection id; any conn_type is accepted, ``extra`` must carry
        librdkafka settings (at least ``bootstrap.servers``, or host/port).
    """

    conn_name_attr = "kafka_conn_id"
    default_conn_name = DEFAULT_KAFKA_CONN_ID
    conn_type = "eo_kafka"
    hook_name = "EO Kafka (librdkafka settings)"

    def __init__(self, kafka_conn_id: str = default_conn_name) -> None:
        super().__init__()
        self.kafka_conn_id = kafka_conn_id
        self._settings: KafkaClientConfig | None = None
        self._client_errors = ClientErrorLog()  # why a call failed (TLS, SASL, refused...)
        self._sharing = False  # inside one_admin_client
        self._shared_admin: AdminClient | None = None

    @property
    def settings(self) -> KafkaClientConfig:
        """librdkafka config and call timeout, resolved once from the connection."""
        if self._settings is None:
            self._settings = kafka_client_config(self.eo_connection(self.kafka_conn_id))
        return self._settings

    def dead_letter_topic(self, spec: PipelineSpec) -> DeadLetterTopic:
        """``spec``'s dead-letter topic through this connection (the protocol's
        ``dead_letter_topics``); ``ValueError`` for a pipeline without one."""
        return DeadLetterTopic.of_pipeline(spec, self.settings)

    def _admin(self) -> AdminClient:
        """The block's client inside :meth:`one_admin_client` (created at its first use),
        else a new one."""
        if not self._sharing:
            return self._new_admin()
        if self._shared_admin is None:
            self._shared_admin = self._new_admin()
        return self._shared_admin

    def _new_admin(self) -> AdminClient:
        return new_admin(self.settings, self._client_errors)  # never creates a topic

    @contextmanager
    def one_admin_client(self) -> Iterator[EoKafkaHook]:
        """Within the block, this hook's reads (partitions, watermarks) go through one
        admin client, created at the first read and dropped when the block ends: a later
        read finds its connections open and the partitions' leaders in its metadata. A
        commit still uses a client of its own. Nested blocks share the outer one's client.
        The block must begin and end in one process (a librdkafka client does not survive
        ``fork``). Yields the hook."""
        if self._sharing:
            yield self
            return
        self._sharing = True
        try:
            yield self
        finally:
            self._sharing = False
            self._shared_admin = None

    def _consumer(self, group_id: str = _PROBE_GROUP) -> AbstractContextManager[Consumer]:
        # read_committed: a reservation ends at the last stable offset, never inside an
        # undecided transaction
        return read_consumer(self.settings, group_id, self._client_errors)

    def list_partitions(self, topics: Iterable[str] | None, pattern: str | None) -> list[TP]:
        """:func:`~airflow_provider_eo.clients.kafka_offset_reads.list_partitions` through this
        hook's admin client."""
        return list_partitions(
            self._admin(), self.settings, self._client_errors, self.kafka_conn_id, topics, pattern
        )

    def watermarks(self, tps: Iterable[TP]) -> dict[TP, tuple[int, int]]:
        """(low, high) watermark of each partition, read from the broker (not cached).

        ``high`` is the partition's last stable offset (asked read_committed, whatever the
        connection says): the end of the records whose transactions are decided. While a
        transaction is open it stays at the transaction's first offset, so ranges reserved
        up to it never wait for, nor end inside, an undecided transaction.

        Batched admin ListOffsets requests (:class:`WatermarkReader`): an error names its
        partition, :class:`EoKafkaError` ``watermarks of <topic>[<partition>]: ...`` (or
        the count on a batch timeout).
        """
        return WatermarkReader(self._admin, self.settings.timeout_s, self._client_errors).read(tps)

    def offsets_for_timestamp(self, tps: Iterable[TP], ts_ms: int) -> dict[TP, int]:
        """:func:`~airflow_provider_eo.clients.kafka_offset_reads.offsets_for_timestamp`."""
        return offsets_for_timestamp(
            self._consumer(), self.settings, self._client_errors, tps, ts_ms, self.watermarks
        )

    def committed_offsets(self, group_id: str, tps: Iterable[TP]) -> dict[TP, int | None]:
        """The group's committed offset per partition, ``None`` where it has none
        (:meth:`GroupOffsets.committed`: retried while its coordinator moves or loads;
        :class:`EoKafkaError` naming the group and partition)."""
        return self._group(group_id).committed(tps)

    def commit_offsets(self, group_id: str, offsets: Mapping[TP, int]) -> None:
        """Commit exactly ``offsets`` to ``group_id`` with a client of its own, waiting at
        most the connection's timeout (:meth:`GroupOffsets.commit`: a success is the
        broker's word for every offset; :class:`EoKafkaError` naming group and partition, then
        the connection: ``... (Kafka connection '<id>')``)."""
        try:
            self._group(group_id).commit(offsets)
        except EoKafkaError as exc:
            raise EoKafkaError(f"{exc} (Kafka connection {self.kafka_conn_id!r})") from exc

    def _group(self, group_id: str) -> GroupOffsets:
        return GroupOffsets(
            group_id, self._consumer, self._new_admin, self.settings.timeout_s, self._client_errors
        )

    def test_connection(self) -> tuple[bool, str]:
        """(True, summary) when cluster metadata can be read, else (False, error)."""
        admin = self._admin()
        try:
            metadata = admin.list_topics(timeout=self.settings.timeout_s)
        except Exception as exc:
            return (
                False,
                f"Kafka connection {self.kafka_conn_id!r} failed: {exc}{self._client_errors.explain(admin)}",
            )
        return True, f"Connected: {len(metadata.brokers)} broker(s), {len(metadata.topics)} topic(s)"
