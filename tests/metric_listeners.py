"""Local receivers for what Airflow's metrics send: a UDP StatsD socket and an OTLP/HTTP endpoint,
and the fixtures pointing Airflow's stats module at them (``statsd``, ``otel``).

Both only record what arrives; tests compare it with the ledger. Neither needs a
collector: StatsD lines are plain text, and OTLP/HTTP bodies are decoded with the
``opentelemetry-proto`` messages Airflow's OTel exporter itself is built on.
"""

from __future__ import annotations

import atexit
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from airflow.sdk.observability import stats
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest
from statsd import StatsClient


class StatsdListener:
    """A UDP socket on 127.0.0.1 collecting StatsD lines (the kernel buffers them until read)."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.setblocking(False)
        self.port = int(self.sock.getsockname()[1])

    def env(self, prefix: str = "airflow") -> dict[str, str]:
        """Airflow settings sending its metrics (ours included) here."""
        return {
            "AIRFLOW__METRICS__STATSD_ON": "True",
            "AIRFLOW__METRICS__STATSD_HOST": "127.0.0.1",
            "AIRFLOW__METRICS__STATSD_PORT": str(self.port),
            "AIRFLOW__METRICS__STATSD_PREFIX": prefix,
        }

    def drain(self) -> list[str]:
        """Every line received since the last drain (a datagram may carry several)."""
        lines: list[str] = []
        while True:
            try:
                data = self.sock.recv(65535)
            except BlockingIOError:
                return lines
            lines += data.decode().splitlines()

    def close(self) -> None:
        self.sock.close()


@dataclass
class OtlpListener:
    """An HTTP server on 127.0.0.1 accepting OTLP/HTTP protobuf metric exports."""

    requests: list[ExportMetricsServiceRequest] = field(default_factory=list)
    port: int = 0

    def env(self) -> dict[str, str]:
        """Airflow settings exporting its metrics here (only when the process exits: the
        periodic export interval is set far beyond any test run)."""
        return {
            "AIRFLOW__METRICS__OTEL_ON": "True",
            "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": f"http://127.0.0.1:{self.port}/v1/metrics",
            "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL": "http/protobuf",
            "OTEL_METRIC_EXPORT_INTERVAL": "3600000",
        }

    def points(self, name_prefix: str) -> list[tuple[str, dict[str, Any], Any]]:
        """``(metric name, attributes, value)`` for every data point of metrics whose name
        starts with ``name_prefix``: sums and gauges give their value, histograms
        ``(count, sum)``."""
        found: list[tuple[str, dict[str, Any], Any]] = []
        for request in self.requests:
            for resource in request.resource_metrics:
                for scope in resource.scope_metrics:
                    for metric in scope.metrics:
                        if metric.name.startswith(name_prefix):
                            found += _points(metric)
        return found


def _points(metric: Any) -> list[tuple[str, dict[str, Any], Any]]:
    kind = metric.WhichOneof("data")
    out: list[tuple[str, dict[str, Any], Any]] = []
    for point in getattr(metric, kind).data_points:
        attrs = {a.key: _any_value(a.value) for a in point.attributes}
        if kind in ("sum", "gauge"):
            value: Any = point.as_int if point.WhichOneof("value") == "as_int" else point.as_double
        else:
            value = (point.count, point.sum)
        out.append((metric.name, attrs, value))
    return out


def _any_value(value: Any) -> Any:
    return getattr(value, value.WhichOneof("value"))


@contextmanager
def otlp_listener() -> Iterator[OtlpListener]:
    """A running :class:`OtlpListener` (stopped on exit)."""
    listener = OtlpListener()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            request = ExportMetricsServiceRequest()
            request.ParseFromString(body)
            listener.requests.append(request)
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    listener.port = int(server.server_address[1])
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield listener
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(name="statsd")
def statsd_fixture() -> Iterator[StatsdListener]:
    """Airflow's stats module sending to a local UDP socket (as ``[metrics] statsd_on`` does)."""
    from airflow.sdk._shared.observability.metrics.base_stats_logger import NoStatsLogger
    from airflow.sdk._shared.observability.metrics.statsd_logger import get_statsd_logger

    listener = StatsdListener()
    stats.initialize(
        factory=lambda: get_statsd_logger(
            stats_class=StatsClient, host="127.0.0.1", port=listener.port, prefix="airflow"
        ),
        export_legacy_names=True,
    )
    yield listener
    stats.initialize(factory=NoStatsLogger, export_legacy_names=True)
    listener.close()


@pytest.fixture(name="otel")
def otel_fixture(monkeypatch: pytest.MonkeyPatch) -> Iterator[OtlpListener]:
    """Airflow's stats module as ``[metrics] otel_on`` configures it, exporting to a local
    OTLP/HTTP endpoint when flushed."""
    from airflow.sdk._shared.observability.metrics.base_stats_logger import NoStatsLogger
    from airflow.sdk._shared.observability.metrics.otel_logger import flush_otel_metrics
    from airflow.sdk.observability.metrics.stats_utils import get_stats_factory
    from opentelemetry import metrics

    with otlp_listener() as listener:
        for name, value in listener.env().items():
            monkeypatch.setenv(name, value)
        stats.initialize(factory=get_stats_factory(), export_legacy_names=True)
        yield listener
        stats.initialize(factory=NoStatsLogger, export_legacy_names=True)
        metrics.get_meter_provider().shutdown()  # type: ignore[attr-defined]
        atexit.unregister(flush_otel_metrics)  # Airflow's exit-time flush of this provider
