"""Schema Registry failures that are not the record's fault (never a dead letter).

Both fail the task; the driver reports it (exit code 4) and Airflow retries the write
step, as for a Kafka or HBase outage. Messages name the registry call and the schema id
or subject, never the URL's credentials. :func:`registry_call` sorts a confluent-kafka
client call's failures into them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from confluent_kafka.schema_registry.common._httpx_compat import httpx
from confluent_kafka.schema_registry.error import SchemaRegistryError

from airflow_provider_eo.errors import RegistryAccessError, error_text

T = TypeVar("T")
#: Answers that mean "not now" (the client retries them too before giving up).
UNAVAILABLE_STATUSES = frozenset({408, 429})


class RegistryUnavailable(RegistryAccessError, ConnectionError):
    """The registry could not be reached, or answered 5xx (or 408/429) after the client's retries."""


class RegistryRefused(RegistryAccessError):
    """The registry refused a call for a reason no record causes (401, 403, a 4xx besides 404)."""


class RegistryNotFound(LookupError):
    """The registry answered 404 (``detail``: status and error code); callers decide what it means."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


def registry_call(registry: str, what: str, request: Callable[[], T]) -> T:
    """``request()``, its failures sorted: 404 -> :class:`RegistryNotFound`; unreachable,
    5xx, 408, 429 -> :class:`RegistryUnavailable`; any other error answer ->
    :class:`RegistryRefused`. ``registry`` (a URL without credentials) and ``what``
    (``"schema id 7"``) go into the message."""
    try:
        return request()
    except SchemaRegistryError as exc:
        status = exc.http_status_code
        detail = f"HTTP {status}, error code {exc.error_code}"
        if status == 404:
            raise RegistryNotFound(detail) from None
        if status >= 500 or status in UNAVAILABLE_STATUSES:
            raise RegistryUnavailable(
                f"Schema Registry {registry} answered {detail} for {what}: {exc.error_message}"
            ) from None
        raise RegistryRefused(
            f"Schema Registry {registry} refused {what}: {detail}: {exc.error_message}"
        ) from None
    except httpx.TransportError as exc:
        raise RegistryUnavailable(
            f"Schema Registry {registry} unreachable for {what}: {error_text(exc)}"
        ) from None
