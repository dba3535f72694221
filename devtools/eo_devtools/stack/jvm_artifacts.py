"""The local stack's JVM servers: pinned poms resolved by Maven into a cache, and a JDK.

Each component (``kafka``, ``hbase``) has a pom under ``eo_devtools/stack/jvm/<component>/`` that
pins exact versions. :func:`resolve` copies its runtime classpath into
``<cache>/<component>-<digest of the pom>/lib`` once; later calls find the ``.complete``
marker and return at once, without Maven and without the network. The cache root is
``$EO_JVM_CACHE`` or ``~/.cache/airflow-provider-eo/jvm``.

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

from eo_devtools.stack.service import MissingBinaryError

COMPONENTS: tuple[str, ...] = ("kafka", "hbase")
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


def lib_dir(component: str) -> Path:
    """Where ``component``'s jars live once resolved (the path changes with the pom)."""
    digest = hashlib.sha256(pom_path(component).read_bytes()).hexdigest()[:16]
    return cache_root() / f"{component}-{digest}" / "lib"


def is_resolved(component: str) -> bool:
    """True when ``component``'s jars are in the cache."""
    return (lib_dir(component) / ".complete").is_file()


def resolve(component: str) -> Path:
    """Return ``component``'s lib dir, running Maven only when it is not cached yet.

    Raises :class:`MissingBinaryError` when Maven is needed but missing, and RuntimeError
    with Maven's last output lines when resolution fails.
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
    result = subprocess.run(
        [
            mvn,
            "--batch-mode",
            "--quiet",
            "--file",
            str(pom_path(component)),
            "dependency:copy-dependencies",
            "-DincludeScope=runtime",
            f"-DoutputDirectory={staging}",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        tail = "\n".join((result.stdout + result.stderr).splitlines()[-25:])
        raise RuntimeError(f"{component}: Maven could not resolve {pom_path(component)}:\n{tail}")
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
        jars = len(list(path.glob("*.jar")))
        print(f"{component}: {'cached' if cached else 'resolved'} {jars} jars in {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
