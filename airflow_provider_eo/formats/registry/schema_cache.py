"""A task's view of the Schema Registry: one fetch per schema id, counted.

:class:`SchemaCache` wraps confluent-kafka's ``SchemaRegistryClient``. Within one task
(one instance) every schema id is fetched from the registry at most once, and so is
every ``(subject, version)`` a schema references; answers are kept, unknown ids included,
so a partition full of records with an unknown id costs one request. ``fetches`` counts
the requests actually sent, ``schema_ids`` the ids the registry resolved.

Outcomes of a fetch:

* the schema: returned (and kept);
* 404 (``40403`` schema not found; any 404): :class:`BadRecord` naming the part and the
  schema id, every time that id is asked for: the record, not the registry, is wrong;
* unreachable (connection refused, DNS, timeout, TLS) or 5xx/408/429 after the client's
  own retries: :class:`RegistryUnavailable`; any other refusal (401, 403, ...):
  :class:`RegistryRefused`. Neither is ever a bad record: the task fails and is retried.

Parsed forms (fastavro schemas, protobuf descriptor pools, JSON Schema validators) are
kept per schema id and kind by :meth:`parsed`. Not thread-safe: one task, one thread.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, TypeVar

from confluent_kafka.schema_registry import RegisteredSchema, Schema, SchemaRegistryClient

from airflow_provider_eo.errors import BadRecord
from airflow_provider_eo.formats.registry.registry_errors import RegistryNotFound, registry_call
from airflow_provider_eo.formats.registry.settings import RegistrySettings

T = TypeVar("T")


class _Unknown:
    """A schema id the registry answered 404 for (kept, so it is asked once)."""

    def __init__(self, detail: str) -> None:
        self.detail = detail


class SchemaCache:
    """Schemas by id for one task; see the module docstring for every outcome."""

    def __init__(self, client: SchemaRegistryClient, where: str = "") -> None:
        self.client = client
        self.where = where
        self.fetches = 0
        self._schemas: dict[tuple[int, str | None], Schema | _Unknown] = {}
        self._versions: dict[tuple[str, int | str, str | None], RegisteredSchema] = {}
        self._parsed: dict[tuple[int, str], Any] = {}

    @classmethod
    def from_settings(cls, settings: RegistrySettings) -> SchemaCache:
        """A cache over a new client for ``settings`` (the caller closes it)."""
        return cls(SchemaRegistryClient(settings.client_conf()), where=settings.where)

    @property
    def schema_ids(self) -> list[int]:
        """The schema ids the registry resolved for this task, ascending."""
        return sorted({sid for (sid, _), schema in self._schemas.items() if isinstance(schema, Schema)})

    def schema(self, schema_id: int, part: str, fmt: str | None = None) -> Schema:
        """The writer schema of ``schema_id`` (``fmt="serialized"`` for Protobuf descriptors; one
        schema id is asked in one format by the decoders of one format).

        Raises BadRecord for an id the registry does not know, RegistryUnavailable or
        RegistryRefused when the registry does not answer with the schema.
        """
        known = self._schemas.get((schema_id, fmt))
        if known is None:
            known = self._schemas[(schema_id, fmt)] = self._fetch_schema(schema_id, fmt)
        if isinstance(known, _Unknown):
            raise BadRecord(f"{part}: schema id {schema_id} is unknown to the registry ({known.detail})")
        return known

    def parsed(self, schema_id: int, kind: str, parse: Callable[[], T]) -> T:
        """``parse()`` once per ``(schema_id, kind)``; a BadRecord it raises is kept and raised again."""
        key = (schema_id, kind)
        if key not in self._parsed:
            try:
                self._parsed[key] = parse()
            except BadRecord as bad:
                self._parsed[key] = bad
        value = self._parsed[key]
        if isinstance(value, BadRecord):
            raise BadRecord(value.reason)
        return value

    def get_version(
        self,
        subject_name: str,
        version: int | Literal["latest"],
        deleted: bool = False,
        fmt: str | None = None,
    ) -> RegisteredSchema:
        """``SchemaRegistryClient.get_version`` kept per task and counted (schema references
        resolve through this: the cache stands in for the client in confluent's resolvers)."""
        key = (subject_name, version, fmt)
        found = self._versions.get(key)
        if found is None:
            what = f"subject {subject_name!r} version {version}"
            found = self._call(what, lambda: self.client.get_version(subject_name, version, deleted, fmt))
            self._versions[key] = found
        return found

    def close(self) -> None:
        """Close the client's HTTP session."""
        self.client.close()

    def _fetch_schema(self, schema_id: int, fmt: str | None) -> Schema | _Unknown:
        try:
            return self._call(f"schema id {schema_id}", lambda: self.client.get_schema(schema_id, fmt=fmt))
        except RegistryNotFound as missing:
            return _Unknown(missing.detail)

    def _call(self, what: str, request: Callable[[], T]) -> T:
        self.fetches += 1
        return registry_call(self.where, what, request)
