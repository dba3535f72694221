"""Maven runs for the JVM cache (:mod:`.jvm_artifacts`): offline first, and the runner build.

:func:`run_maven` tries ``mvn --offline`` first, so a machine whose local Maven repository
already holds every artifact needs no network, and runs online only when that fails.
:func:`build_runner` builds a Quarkus application from a pinned directory (the Schema
Registry's): a copy of the directory, never the source tree, is built, so the repository stays
clean and may be read-only.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path


def run_maven(mvn: str, pom: Path, goals: list[str]) -> None:
    """Run ``goals`` on ``pom`` in batch mode: offline, then online if offline fails.

    Raises RuntimeError naming the pom with Maven's last 25 output lines when both fail.
    """
    base = [mvn, "--batch-mode", "--quiet", "--file", str(pom)]
    result = subprocess.run([*base, "--offline", *goals], capture_output=True, text=True, check=False)
    if result.returncode == 0:
        return
    result = subprocess.run([*base, *goals], capture_output=True, text=True, check=False)
    if result.returncode != 0:
        tail = "\n".join((result.stdout + result.stderr).splitlines()[-25:])
        raise RuntimeError(f"Maven failed on {pom} ({' '.join(goals)}):\n{tail}")


def build_runner(mvn: str, source: Path, work: Path, output: Path, runner: str) -> None:
    """Build the Quarkus ``legacy-jar`` of ``source`` (a pom directory) into ``output``.

    ``source`` is copied to ``work`` (its ``target/`` dirs left out); every sub-directory
    holding a ``pom.xml`` is a helper module the application needs at build time and is
    installed into the local Maven repository first (sorted by name); then the top pom is
    packaged. ``output`` receives ``runner`` (the jar named by the pom) and the runner's
    ``lib/``; ``work`` is removed afterwards. Raises RuntimeError like :func:`run_maven`,
    and when the build does not produce ``runner``.
    """
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(source, work, ignore=shutil.ignore_patterns("target"))
    try:
        for module in sorted(p.parent for p in work.glob("*/pom.xml")):
            run_maven(mvn, module / "pom.xml", ["install", "-DskipTests"])
        run_maven(mvn, work / "pom.xml", ["package", "-DskipTests"])
        built = work / "target" / runner
        if not built.is_file():
            raise RuntimeError(f"Maven built {work / 'pom.xml'} but {built} is missing")
        shutil.move(str(built), output / runner)
        shutil.move(str(work / "target" / "lib"), output / "lib")
    finally:
        shutil.rmtree(work, ignore_errors=True)
