"""Apicurio Registry for the local stack: the Schema Registry of Avro/Protobuf/JSON Schema topics.

Apicurio Registry 2.4.2.Final (built by :mod:`.jvm_build` from ``jvm/schema-registry/``)
serves the Confluent-compatible API at ``/apis/ccompat/v7``, which confluent-kafka's
``SchemaRegistryClient`` speaks. Storage is in memory (H2): schemas live as long as the
process, and a restart starts empty. One JVM on 127.0.0.1, lean: a 256 MB heap, the serial
collector, the C1 compiler only, and a class-data archive of the runner made once
(:mod:`.class_archive`): it starts in seconds and serves a handful of schemas.

The global compatibility level is set explicitly (:data:`COMPATIBILITY`), because the
defaults differ: Apicurio's is NONE, Confluent's BACKWARD. It is Apicurio's default global
rule from the first request (``registry.rules.global.compatibility``) and is set again
through ``PUT /config`` on every ``up`` (``GET /config`` reports only that one).
"""

from __future__ import annotations

import json
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from eo_devtools.stack.class_archive import archive_path, ensure_archive
from eo_devtools.stack.java_service import JavaService
from eo_devtools.stack.jvm_artifacts import java_binary, lib_dir, runner_jar
from eo_devtools.stack.ports import LOOPBACK, find_free_port
from eo_devtools.stack.process import ServiceStartError

CCOMPAT_PATH = "/apis/ccompat/v7"
"""The Confluent-compatible API's base path on Apicurio Registry 2.x."""
COMPATIBILITY = "BACKWARD"
"""The global compatibility level the stack sets (Confluent's default)."""
CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"


def registry_url(port: int) -> str:
    """The base URL Confluent clients take: ``http://127.0.0.1:<port>/apis/ccompat/v7``."""
    return f"http://{LOOPBACK}:{port}{CCOMPAT_PATH}"


def call(url: str, method: str = "GET", body: Any = None, timeout_s: float = 3.0) -> Any:
    """One REST call to the registry; returns the decoded JSON answer.

    Raises ``urllib.error.URLError`` (``HTTPError`` for a non-2xx answer) or ``OSError``
    when the registry does not answer, ValueError when the answer is not JSON.
    """
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": CONTENT_TYPE})
    with urllib.request.urlopen(request, timeout=timeout_s) as response:
        return json.loads(response.read())


def serves(url: str) -> bool:
    """True when ``GET <url>/subjects`` answers with a JSON list (the REST API serves)."""
    try:
        return isinstance(call(f"{url}/subjects"), list)
    except (OSError, ValueError):
        return False


def class_archive() -> Path:
    """The runner's class-data archive (:mod:`.class_archive`) for the JDK in use, made when missing.

    Raises :class:`ServiceStartError` when the runner does not come up to make it.
    """
    archive = archive_path(lib_dir("schema-registry"), java_binary())
    port = find_free_port()
    argv = SchemaRegistryService.runner_argv(port)
    return ensure_archive(archive, argv, lambda: serves(registry_url(port)), archive.with_suffix(".log"))


class SchemaRegistryService(JavaService):
    """Apicurio Registry on 127.0.0.1:``port``, in-memory storage, compatibility :data:`COMPATIBILITY`."""

    name = "schema-registry"
    port_keys = ("schema-registry",)
    component = "schema-registry"
    heap = "256m"
    stop_grace_s = 15.0
    startup_timeout_s = 90.0

    @property
    def home(self) -> Path:
        """``<state>/schema-registry``: the process's working directory (nothing is stored)."""
        return self.state_dir / "schema-registry"

    @property
    def url(self) -> str:
        return registry_url(self.port)

    def cwd(self) -> Path:
        return self.home

    def prepare(self) -> None:
        self.home.mkdir(parents=True, exist_ok=True)

    def program_args(self) -> list[str]:
        return []

    def preflight(self) -> None:
        """Java, the runner (built when not cached) and its class archive (made when missing)."""
        super().preflight()
        class_archive()

    def argv(self) -> list[str]:
        """The runner on this service's port, mapping the class archive when there is one."""
        java, *options = self.runner_argv(self.port)
        archive = archive_path(lib_dir(self.component), java)
        return [java, f"-XX:SharedArchiveFile={archive}", *options] if archive.is_file() else [java, *options]

    @classmethod
    def runner_argv(cls, port: int) -> list[str]:
        """``java -jar`` the Quarkus runner on ``port``; every setting a system property (no secrets)."""
        return [
            java_binary(),
            f"-Xmx{cls.heap}",
            "-XX:+UseSerialGC",
            "-XX:TieredStopAtLevel=1",
            "-XX:MaxMetaspaceSize=192m",
            "-Xss512k",
            "-Djava.awt.headless=true",
            f"-Dquarkus.http.host={LOOPBACK}",
            f"-Dquarkus.http.port={port}",
            # Apicurio's prod profile keeps 20 idle H2 connections; a few serve the stack.
            "-Dquarkus.datasource.jdbc.initial-size=2",
            "-Dquarkus.datasource.jdbc.min-size=2",
            "-Dquarkus.datasource.jdbc.max-size=20",
            # Enforced from the first request; after_start also sets it through the API, which
            # is what GET /config reports (a default global rule reads as NONE there).
            f"-Dregistry.rules.global.compatibility={COMPATIBILITY}",
            "-jar",
            str(runner_jar(cls.component)),
        ]

    def healthy(self) -> bool:
        """True when ``GET /subjects`` answers with a JSON list (the REST API serves)."""
        return serves(self.url)

    def after_start(self) -> None:
        """Set the global compatibility to :data:`COMPATIBILITY` and read it back.

        Raises :class:`ServiceStartError` when the registry refuses or answers another level.
        """
        try:
            call(f"{self.url}/config", "PUT", {"compatibility": COMPATIBILITY})
            level = call(f"{self.url}/config").get("compatibilityLevel")
        except (OSError, ValueError) as exc:
            raise ServiceStartError(
                f"schema-registry: setting compatibility {COMPATIBILITY} on {self.url}/config failed: {exc}"
            ) from exc
        if level != COMPATIBILITY:
            raise ServiceStartError(
                f"schema-registry: compatibility is {level!r} after setting {COMPATIBILITY!r} "
                f"on {self.url}/config"
            )


def main() -> int:
    """``python -m eo_devtools.stack.schema_registry``: make the runner's class archive (setup runs it)."""
    print(f"schema-registry: class archive {class_archive()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
