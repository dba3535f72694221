"""Build every image of ``docker/`` from a Debian base made here: nothing is pulled from a registry.

``python -m eo_devtools.docker_images [--base IMAGE] [--scratch DIR]`` starts a private engine
(:mod:`eo_devtools.docker_engine`), makes ``local/debian:bookworm`` with
``debootstrap --variant=minbase`` + ``docker import`` unless ``--base`` names another base
or it exists, stages the build context's generated part under ``docker/.build/`` (the host's
local CA certificates, never committed; the Kafka, HBase and Schema Registry jars from the
setup's JVM cache, which Maven fills from Maven Central: :mod:`eo_devtools.stack.jvm_artifacts`),
builds :data:`IMAGES` in order with ``--build-arg BASE_IMAGE``, then stops the engine
(``--keep-engine`` leaves it up). Builds use Debian's client and the legacy builder (no
BuildKit frontend to pull).

Raises :class:`~eo_devtools.docker_engine.DockerEngineError` naming the image and the step.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from eo_devtools.docker_engine import DEBOOTSTRAP, DOCKER, DockerEngineError, PrivateDockerd
from eo_devtools.stack.jvm_artifacts import resolve

REPO = Path(__file__).resolve().parents[2]
DOCKER_DIR = REPO / "docker"
STAGE = DOCKER_DIR / ".build"
DEFAULT_BASE = "local/debian:bookworm"
DEFAULT_SCRATCH = Path("/tmp/eo-docker/engine")
MIRROR = "http://deb.debian.org/debian"
LOCAL_CA_DIR = Path("/usr/local/share/ca-certificates")
#: (tag, Dockerfile) in build order; eo-jvm first, the JVM images build FROM it.
IMAGES: tuple[tuple[str, str], ...] = (
    ("eo-jvm:0.1.0", "Dockerfile.jvm"),
    ("eo-postgres:0.1.0", "Dockerfile.postgres"),
    ("eo-redis:0.1.0", "Dockerfile.redis"),
    ("eo-kafka:4.1.1", "Dockerfile.kafka"),
    ("eo-hbase:2.6.1", "Dockerfile.hbase"),
    ("eo-schema-registry:2.4.2.Final", "Dockerfile.schema-registry"),
    ("eo-airflow:0.1.0", "Dockerfile.airflow"),
)
JVM_COMPONENTS = ("kafka", "hbase", "schema-registry")


def image_exists(engine: PrivateDockerd, tag: str) -> bool:
    """True when ``tag`` is an image of ``engine``."""
    run = subprocess.run(
        [DOCKER, "image", "inspect", tag], env=engine.env(), capture_output=True, check=False
    )
    return run.returncode == 0


def build_base(engine: PrivateDockerd, tag: str = DEFAULT_BASE) -> None:
    """``debootstrap --variant=minbase bookworm`` into a temporary directory, imported as ``tag``
    (skipped when ``tag`` exists); raises DockerEngineError with the tool's output tail."""
    if image_exists(engine, tag):
        return
    with tempfile.TemporaryDirectory(prefix="eo-rootfs-") as rootfs:
        argv = ["nice", DEBOOTSTRAP, "--variant=minbase", "bookworm", rootfs, MIRROR]
        run = subprocess.run(argv, capture_output=True, text=True, check=False)
        if run.returncode != 0:
            raise DockerEngineError(
                f"debootstrap failed ({run.returncode}): {run.stdout[-2000:]}{run.stderr[-2000:]}"
            )
        tar = subprocess.Popen(["tar", "-C", rootfs, "-c", "."], stdout=subprocess.PIPE)
        imported = subprocess.run(
            [DOCKER, "import", "-", tag],
            stdin=tar.stdout,
            env=engine.env(),
            capture_output=True,
            text=True,
            check=False,
        )
        tar.wait()
        if imported.returncode != 0 or tar.returncode != 0:
            raise DockerEngineError(f"docker import {tag} failed: {imported.stderr[-2000:]}")


def stage_context() -> None:
    """Fill ``docker/.build/``: ``ca-certificates/`` (the host's local CA files, maybe none) and
    ``jvm/<component>/`` (the resolved jars, Maven resolving them first when the cache lacks them)."""
    ca_dir = STAGE / "ca-certificates"
    shutil.rmtree(ca_dir, ignore_errors=True)
    ca_dir.mkdir(parents=True)
    for cert in sorted(LOCAL_CA_DIR.rglob("*.crt")) if LOCAL_CA_DIR.is_dir() else []:
        shutil.copy2(cert, ca_dir / cert.name)
    for component in JVM_COMPONENTS:
        source = resolve(component)
        target = STAGE / "jvm" / component
        marker = target / ".source"
        if marker.is_file() and marker.read_text() == str(source):
            continue
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(source, target, ignore=shutil.ignore_patterns(".complete", "*.jsa", "*.log"))
        marker.write_text(str(source))


def build_images(engine: PrivateDockerd, base: str = DEFAULT_BASE) -> dict[str, float]:
    """Build :data:`IMAGES` from ``base`` (niced); returns seconds per tag; raises
    DockerEngineError naming the image, with the build output's tail, on a failed build."""
    seconds: dict[str, float] = {}
    for tag, dockerfile in IMAGES:
        started = time.monotonic()
        argv = ["nice", DOCKER, "build", "-f", str(DOCKER_DIR / dockerfile), "-t", tag]
        argv += ["--build-arg", f"BASE_IMAGE={base}", str(REPO)]
        run = subprocess.run(argv, env=engine.env(), capture_output=True, text=True, check=False)
        if run.returncode != 0:
            raise DockerEngineError(
                f"building {tag} ({dockerfile}) failed: {run.stdout[-3000:]}{run.stderr[-2000:]}"
            )
        seconds[tag] = round(time.monotonic() - started, 1)
    return seconds


def main(argv: list[str] | None = None) -> int:
    """The command line (see the module doc); prints each image's build seconds."""
    parser = argparse.ArgumentParser(prog="python -m eo_devtools.docker_images", description=__doc__)
    parser.add_argument(
        "--base", default=DEFAULT_BASE, help="Debian bookworm base image (default: made here)"
    )
    parser.add_argument(
        "--scratch", type=Path, default=DEFAULT_SCRATCH, help="the private engine's directory"
    )
    parser.add_argument("--keep-engine", action="store_true", help="leave dockerd running")
    args = parser.parse_args(argv)
    engine = PrivateDockerd(args.scratch)
    engine.start()
    try:
        if args.base == DEFAULT_BASE:
            build_base(engine)
        stage_context()
        for tag, seconds in build_images(engine, args.base).items():
            print(f"{tag}: {seconds} s")
    finally:
        if not args.keep_engine:
            engine.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
