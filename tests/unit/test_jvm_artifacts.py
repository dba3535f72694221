"""The JVM servers' pinned poms and their cache (resolved by scripts/setup.sh before the tests)."""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

from eo_devtools.stack.jvm_artifacts import COMPONENTS, jar_list, lib_dir, pom_path, runner_jar, source_digest

POM_NS = {"m": "http://maven.apache.org/POM/4.0.0"}


def _properties(component: str) -> dict[str, str]:
    """The pom's ``<properties>``: name -> value."""
    root = ET.parse(pom_path(component)).getroot()
    return {el.tag.split("}")[1]: el.text or "" for el in root.find("m:properties", POM_NS) or []}


def _versions(component: str) -> dict[str, str]:
    """artifactId -> version (properties substituted) of the pom's direct dependencies."""
    root = ET.parse(pom_path(component)).getroot()
    properties = _properties(component)

    def substitute(text: str) -> str:
        for _ in range(3):
            text = re.sub(r"\$\{([^}]+)\}", lambda m: properties[m.group(1)], text)
        return text

    return {
        dep.findtext("m:artifactId", namespaces=POM_NS) or "": substitute(
            dep.findtext("m:version", namespaces=POM_NS) or ""
        )
        for dep in root.findall("m:dependencies/m:dependency", POM_NS)
    }


def test_every_dependency_is_pinned_to_an_exact_release() -> None:
    assert _versions("kafka") == {"kafka_2.13": "4.1.1", "log4j-slf4j-impl": "2.24.3"}
    assert _versions("hbase") == {
        "hbase-server": "2.6.1-hadoop3",
        "hbase-zookeeper": "2.6.1-hadoop3",
        "hbase-thrift": "2.6.1",
    }


def test_spark_kafka_pins_the_connector_and_excludes_everything_pyspark_ships() -> None:
    assert _versions("spark-kafka") == {
        "spark-sql-kafka-0-10_2.13": "4.2.0",
        "spark-token-provider-kafka-0-10_2.13": "4.2.0",
        "kafka-clients": "3.9.2",
        "commons-pool2": "2.13.1",
    }
    root = ET.parse(pom_path("spark-kafka")).getroot()
    exclusions = [
        [
            (e.findtext("m:groupId", namespaces=POM_NS), e.findtext("m:artifactId", namespaces=POM_NS))
            for e in dep
        ]
        for dep in root.findall("m:dependencies/m:dependency/m:exclusions", POM_NS)
    ]
    assert exclusions == [[("*", "*")]] * 4


def test_pyspark_ships_what_the_connector_jars_leave_out() -> None:
    """The compile dependencies of spark-sql-kafka 4.2.0 and kafka-clients 3.9.2 that the pom
    excludes are in pyspark's own jars/ (the versions 4.2.0 asks for where it pins one), and
    pyspark has no Kafka client or commons-pool2 of its own to clash with the pom's."""
    import pyspark

    shipped = {p.name for p in (Path(pyspark.__file__).parent / "jars").glob("*.jar")}
    assert {
        "hadoop-client-runtime-3.5.0.jar",
        "scala-parallel-collections_2.13-1.2.0.jar",
        "jsr305-3.0.0.jar",
        f"spark-tags_2.13-{pyspark.__version__}.jar",
    } <= shipped
    for prefix in ("zstd-jni-", "lz4-java-", "snappy-java-", "slf4j-api-"):
        assert any(name.startswith(prefix) for name in shipped), prefix
    assert not [n for n in shipped if n.startswith(("kafka-clients-", "commons-pool2-", "spark-sql-kafka"))]


def test_schema_registry_pins_apicurio_its_quarkus_and_the_everit_replacement() -> None:
    assert {
        key: value
        for key, value in _properties("schema-registry").items()
        if key.endswith("version") and not key.startswith("maven")
    } == {
        "apicurio.version": "2.4.2.Final",
        "apicurio-common-app-components.version": "0.1.18.Final",
        "quarkus.version": "2.16.4.Final",
        "everit-json-schema.version": "1.14.4",
    }
    assert _versions("schema-registry")["everit-json-schema"] == "1.14.4"
    assert _versions("schema-registry")["registry-config-index-steps"] == "1"


def test_schema_registry_cache_key_covers_its_build_step_module() -> None:
    pom = pom_path("schema-registry")
    only_pom = hashlib.sha256(pom.read_bytes()).hexdigest()[:16]
    assert (pom.parent / "config-index-steps" / "pom.xml").is_file()
    assert source_digest("schema-registry") != only_pom
    assert source_digest("kafka") == hashlib.sha256(pom_path("kafka").read_bytes()).hexdigest()[:16]


def test_cached_jars_need_neither_maven_nor_the_network() -> None:
    env = {**os.environ, "PATH": str(Path(sys.executable).parent)}  # no mvn on PATH
    result = subprocess.run(
        [sys.executable, "-m", "eo_devtools.stack.jvm_artifacts"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert [line.split(" jars in ")[1] for line in result.stdout.splitlines()] == [
        str(lib_dir(c)) for c in COMPONENTS
    ]
    assert all(": cached " in line for line in result.stdout.splitlines())
    kafka_jars = {p.name for p in lib_dir("kafka").glob("*.jar")}
    hbase_jars = {p.name for p in lib_dir("hbase").glob("*.jar")}
    assert {"kafka_2.13-4.1.1.jar", "kafka-clients-4.1.1.jar", "log4j-slf4j-impl-2.24.3.jar"} <= kafka_jars
    assert {
        "hbase-server-2.6.1-hadoop3.jar",
        "hbase-zookeeper-2.6.1-hadoop3.jar",
        "hbase-thrift-2.6.1.jar",
    } <= (hbase_jars)
    assert [p.name for p in jar_list("spark-kafka")] == [
        "commons-pool2-2.13.1.jar",
        "kafka-clients-3.9.2.jar",
        "spark-sql-kafka-0-10_2.13-4.2.0.jar",
        "spark-token-provider-kafka-0-10_2.13-4.2.0.jar",
    ]
    registry_jars = {p.name for p in (lib_dir("schema-registry") / "lib").glob("*.jar")}
    assert runner_jar("schema-registry") == lib_dir("schema-registry") / "schema-registry-1-runner.jar"
    assert runner_jar("schema-registry").is_file()
    assert {
        "io.apicurio.apicurio-registry-common-2.4.2.Final.jar",
        "io.quarkus.quarkus-core-2.16.4.Final.jar",
        "com.github.erosb.everit-json-schema-1.14.4.jar",
        "io.github.airflow-provider-eo.devstack.registry-config-index-steps-1.jar",
    } <= registry_jars
    assert not [j for j in registry_jars if "everit-org" in j or "config-index-deployment" in j]
    # Only hbase-thrift is the Hadoop 2 build (no -hadoop3 one on Maven Central); the rest are -hadoop3.
    assert sorted(j for j in hbase_jars if re.fullmatch(r"hbase-[a-z0-9-]+-2\.6\.1\.jar", j)) == [
        "hbase-thrift-2.6.1.jar"
    ]
