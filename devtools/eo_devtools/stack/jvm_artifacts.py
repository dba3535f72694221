"""The local stack's JVM servers: pinned poms resolved by Maven into a cache, and a JDK.

Each component (``kafka``, ``hbase``, ``schema-registry``, ``spark-kafka``) has a pom under
``eo_devtools/stack/jvm/<component>/`` that pins exact versions. :func:`resolve` fills
``<cache>/<component>-<digest>/lib`` once; later calls find the ``.complete`` marker and
return at once, without Maven and without the network. The digest covers the pom and, for a
built component, every other file of its directory. The cache root is ``$EO_JVM_CACHE`` or
``~/.cache/airflow-provider-eo/jvm``.

Kafka and HBase are resolved: ``lib`` holds their runtime classpath. ``spark-kafka`` is Spark's
Kafka connector for the benchmark's ``spark_native`` section: ``lib`` holds exactly the jars
spark-submit's ``--jars`` needs beside pyspark's own (:func:`jar_list`). The Schema Registry is
built (:mod:`.jvm_build`): ``lib`` holds its Quarkus runner jar (:func:`runner_jar`) beside
the runner's own ``lib/``.

``python -m eo_devtools.stack.jvm_artifacts`` resolves every component (setup
runs it).
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from eo_devtools.stack.jvm_build import build_runner, run_maven
from eo_devtools.stack.service import MissingBinaryError

COMPONENTS: tuple[str, ...] = ("kafka", "hbase", "schema-registry", "spark-kafka", "yarn")
BUILT: dict[str, str] = {"schema-registry": "schema-registry-1-runner.jar"}
"""Components Maven builds into a runner jar (the jar's name), not just resolves."""
POM_DIR = Path(__file__).resolve().parent / "jvm"
MIN_JAVA = 17


def cache_root() -> Path:
    """``$EO_JVM_CACHE`` or ``~/.cache/airflow-provider-eo/jvm``."""
    configured = os.environ.get("EO_JVM_CACHE")
    return Path(configured) if configured else Path.home() / ".cache" / "airflow-provider-eo" / "jvm"


def pom_path(component: str) -> Path:
    """The pinned pom of ``component``; raises KeyError for an unknown component."""
    if component not in COMPONENTS:
        raise KeyError(f"unknown JVM component {component!r}; known: {', '.join(COMPONENTS)}")
    return POM_DIR / component / "pom.xml"


def source_digest(component: str) -> str:
    """16 hex digits of SHA-256 over the pom, then (built components) every other file of the
    component's directory, sorted, each as its relative path and its bytes (``target/`` aside)."""
    pom = pom_path(component)
    digest = hashlib.sha256(pom.read_bytes())
    if component in BUILT:
        for path in sorted(p for p in pom.parent.rglob("*") if p.is_file() and p != pom):
            relative = path.relative_to(pom.parent)
            if "target" not in relative.parts:
                digest.update(str(relative).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def lib_dir(component: str) -> Path:
    """Where ``component``'s jars live once resolved (the path changes with its sources)."""
    return cache_root() / f"{component}-{source_digest(component)}" / "lib"


def runner_jar(component: str) -> Path:
    """The runner jar of a built component (``java -jar`` it); raises KeyError for others."""
    return lib_dir(component) / BUILT[component]


def is_resolved(component: str) -> bool:
    """True when ``component``'s jars are in the cache."""
    return (lib_dir(component) / ".complete").is_file()


def resolve(component: str) -> Path:
    """Return ``component``'s lib dir, running Maven only when it is not cached yet.

    Maven runs offline first (everything may be in its local repository already), then
    online. Raises :class:`MissingBinaryError` when Maven is needed but missing, and
    RuntimeError with Maven's last output lines when resolution or the build fails.
    """
    target = lib_dir(component)
    if is_resolved(component):
        return target
    mvn = shutil.which("mvn")
    if mvn is None:
        raise MissingBinaryError(
            f"{component}: its jars are not cached in {target.parent} and Maven (mvn) is not installed; "
            "run scripts/setup.sh (it installs maven with apt) or install maven"
        )
    staging = target.parent / "lib.partial"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    if component in BUILT:
        build_runner(mvn, pom_path(component).parent, target.parent / "build", staging, BUILT[component])
    else:
        run_maven(
            mvn,
            pom_path(component),
            ["dependency:copy-dependencies", "-DincludeScope=runtime", f"-DoutputDirectory={staging}"],
        )
    shutil.rmtree(target, ignore_errors=True)
    staging.rename(target)
    (target / ".complete").write_text("resolved\n")
    return target


def classpath(component: str, *first: Path) -> str:
    """A java ``-cp`` value: the ``first`` entries (config dirs), then every jar of ``component``.

    Raises :class:`MissingBinaryError` when the component is not resolved and cannot be.
    """
    jars = resolve(component)
    return os.pathsep.join([*(str(p) for p in first), str(jars / "*")])


def jar_list(component: str) -> list[Path]:
    """Every jar of ``component``, sorted by name (e.g. for spark-submit's ``--jars``).

    Raises :class:`MissingBinaryError` when the component is not resolved and cannot be.
    """
    return sorted(resolve(component).glob("*.jar"))


def java_binary() -> str:
    """The ``java`` of ``$JAVA_HOME`` or PATH, checked to be Java 17 or newer.

    Raises :class:`MissingBinaryError` naming what to install.
    """
    java_home = os.environ.get("JAVA_HOME")
    candidate = str(Path(java_home) / "bin" / "java") if java_home else shutil.which("java")
    if not candidate or not Path(candidate).is_file():
        raise MissingBinaryError(
            "java: no Java runtime found (JAVA_HOME or PATH); Apache Kafka and HBase need Java "
            f"{MIN_JAVA}+: run scripts/setup.sh (it installs openjdk-17-jdk-headless with apt)"
        )
    _require_java_17(candidate)
    return candidate


@functools.cache
def _require_java_17(java: str) -> None:
    """Raise :class:`MissingBinaryError` unless ``java -version`` says 17+ (asked once per binary)."""
    banner = subprocess.run([java, "-version"], capture_output=True, text=True, check=False).stderr
    match = re.search(r'version "(\d+)', banner)
    if match is None or int(match.group(1)) < MIN_JAVA:
        first_line = banner.splitlines()[0] if banner else "no version banner"
        raise MissingBinaryError(
            f"java: {java} is not Java {MIN_JAVA}+ ({first_line}); set JAVA_HOME to a JDK 17"
        )


def main() -> int:
    """Resolve every component; print where each one's jars are."""
    for component in COMPONENTS:
        cached = is_resolved(component)
        path = resolve(component)
        jars = len(list(path.rglob("*.jar")))
        print(f"{component}: {'cached' if cached else 'resolved'} {jars} jars in {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
