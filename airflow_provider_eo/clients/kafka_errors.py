"""The error a failed Kafka call raises, and librdkafka's asynchronous client errors
kept to explain it.

librdkafka reports why it cannot talk to a broker (TLS handshake or certificate
verification failed, SASL authentication failed, connection refused) only through the
``error_cb`` callback; the call that then fails just says "Broker transport failure" or
times out. Every Kafka client of this package registers a :class:`ClientErrorLog` as
``error_cb`` and appends :meth:`ClientErrorLog.explain` to its error messages.
"""

from __future__ import annotations

from contextlib import suppress
from typing import Any

from airflow_provider_eo.errors import KafkaAccessError

#: librdkafka's summary codes that say nothing about the cause ("1/1 brokers are down").
_UNINFORMATIVE_CODES = frozenset({-187})  # _ALL_BROKERS_DOWN


class EoKafkaError(KafkaAccessError, RuntimeError):
    """A Kafka metadata/offset call failed; the message names the topic/partition or group."""


class ClientErrorLog:
    """Callable ``error_cb``: remembers the last ``keep`` distinct error texts (most recent last)."""

    def __init__(self, keep: int = 3) -> None:
        self.keep = keep
        self.seen: list[str] = []

    def __call__(self, error: Any) -> None:
        if error.code() in _UNINFORMATIVE_CODES:
            return
        text = str(error.str())
        if text in self.seen:
            self.seen.remove(text)
        self.seen.append(text)
        del self.seen[: -self.keep]

    def explain(self, client: Any = None) -> str:
        """``" (client errors: a; b)"``, or ``""`` when none were reported. With a ``client``
        (Consumer, Producer or AdminClient), its pending callbacks are served first."""
        if client is not None:
            with suppress(Exception):
                client.poll(0)
        return f" (client errors: {'; '.join(self.seen)})" if self.seen else ""
