"""A class-data-sharing (AppCDS) archive of a JVM server: made once, then every start maps it.

A Quarkus server spends most of its start loading and verifying classes. Java 17 can record
the classes one run loaded into a dynamic archive (``-XX:ArchiveClassesAtExit``) and map it on
later starts (``-XX:SharedArchiveFile``): the Schema Registry then answers in about 6 s instead
of 28 s on a loaded machine, with 20 MB less resident memory. :func:`ensure_archive` makes the
archive by running the server once until it answers, then stopping it (the JVM writes the
archive as it exits). The archive is only valid for the JDK and classpath it was made with, so
its name carries a digest of the JDK's version banner and it lives beside the jars it covers.
A JVM that cannot use an archive starts without it, silently (Java 17): a mapped archive shows
in the process's ``/proc/<pid>/maps``.
"""

from __future__ import annotations

import functools
import hashlib
import os
import signal
import subprocess
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from eo_devtools.stack.process import ServiceStartError


@functools.cache
def jdk_digest(java: str) -> str:
    """8 hex digits of SHA-256 over ``java -version``'s banner (the JDK build an archive needs)."""
    banner = subprocess.run([java, "-version"], capture_output=True, text=True, check=False).stderr
    return hashlib.sha256(banner.encode()).hexdigest()[:8]


def archive_path(directory: Path, java: str) -> Path:
    """Where the archive of the jars in ``directory`` made with ``java`` lives."""
    return directory / f"classes-{jdk_digest(java)}.jsa"


def ensure_archive(
    archive: Path, argv: list[str], answers: Callable[[], bool], log: Path, timeout_s: float = 300.0
) -> Path:
    """Return ``archive``, making it first when missing.

    ``argv`` runs the server (``java`` first, no archive option); it is started once with
    ``-XX:ArchiveClassesAtExit`` pointing at a private partial file, left running until
    ``answers()`` is true, stopped with SIGTERM, and the file renamed to ``archive`` (so two
    stacks making it at once never see a half-written one). Its output goes to ``log``.
    Raises :class:`ServiceStartError` naming ``log`` when the server does not answer within
    ``timeout_s`` or exits without writing the archive.
    """
    if archive.is_file():
        return archive
    partial = archive.with_name(f"{archive.name}.{uuid.uuid4().hex[:8]}.partial")
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as out:
        process = subprocess.Popen(
            [argv[0], f"-XX:ArchiveClassesAtExit={partial}", *argv[1:]],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
    try:
        deadline = time.monotonic() + timeout_s
        while not answers():
            if process.poll() is not None or time.monotonic() > deadline:
                raise ServiceStartError(
                    f"making the class archive {archive}: the server did not answer; see {log}"
                )
            time.sleep(0.25)
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=120)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    if not partial.is_file():
        raise ServiceStartError(f"making the class archive {archive}: the JVM wrote none; see {log}")
    os.replace(partial, archive)
    return archive
