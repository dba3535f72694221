"""What the write application's Python driver can tell about the JVM that started it.

In client deploy mode ``spark-submit``'s JVM (the Spark driver) starts the Python driver as
its child, so the parent process is that JVM. :func:`class_archive_in_use` says which
class-data archive it mapped (``-XX:SharedArchiveFile``, made by the write operator:
:mod:`airflow_provider_eo.operators.driver_class_archive`), so the driver's log shows
whether the archive served its start.
"""

from __future__ import annotations

import os

#: The JDK's own default archive, mapped by every JVM started with class-data sharing on.
JDK_DEFAULT_ARCHIVES = ("/classes.jsa", "/classes_nocoops.jsa")


def class_archive_in_use(pid: int | None = None) -> str | None:
    """The path of the class-data archive (a ``.jsa`` file other than the JDK's default) that
    process ``pid`` (default: this process's parent) has mapped, or None (none mapped, not a
    JVM, or its memory map unreadable)."""
    maps = f"/proc/{os.getppid() if pid is None else pid}/maps"
    try:
        with open(maps, encoding="utf-8", errors="replace") as handle:
            for line in handle:
                path = line.rstrip("\n").split(maxsplit=5)[-1]
                if path.endswith(".jsa") and not path.endswith(JDK_DEFAULT_ARCHIVES):
                    return path
    except OSError:
        return None
    return None
