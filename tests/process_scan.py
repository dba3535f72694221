"""A background scanner of every process's command line, for tests that prove secrets stay off them."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable
from pathlib import Path

#: ``watch_any_of`` for "a spark-submit launcher (script) or its JVM (``SparkSubmit``)".
SPARK_SUBMIT = ("SparkSubmit", "spark-submit")


class CommandLineScanner:
    """While active (a context manager), polls ``/proc/<pid>/cmdline`` of every process but
    this one every ``interval`` seconds.

    Contract, readable once the block has exited:

    * ``leaks``: one line per (scan, process, secret) where a command line contained one of
      ``secrets`` (empty strings ignored, duplicates counted once). A line names the pid and
      shows the command line with every secret replaced by ``<SECRET>``, so a failing
      assertion never prints a secret. Nothing leaked: ``leaks == []``.
    * ``watched``: pids of the processes whose command line contained ``watch`` (and, when
      ``watch_any_of`` is given, at least one of those strings too). Non-empty proves the
      scanner overlapped the processes it was meant to watch.
    * ``scans``: how many full passes over ``/proc`` were made.
    """

    def __init__(
        self,
        secrets: Iterable[str],
        watch: str,
        *,
        watch_any_of: Iterable[str] = (),
        interval: float = 0.05,
    ) -> None:
        # longest first, so a secret containing another one is redacted whole
        self.secrets = sorted({s.encode() for s in secrets if s}, key=lambda s: (-len(s), s))
        self.watch = watch.encode()
        self.watch_any_of = [s.encode() for s in watch_any_of]
        self.interval = interval
        self.leaks: list[str] = []
        self.watched: set[int] = set()
        self.scans = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="cmdline-scanner", daemon=True)

    def __enter__(self) -> CommandLineScanner:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _is_watched(self, cmdline: bytes) -> bool:
        if self.watch not in cmdline:
            return False
        return not self.watch_any_of or any(s in cmdline for s in self.watch_any_of)

    def _redacted(self, cmdline: bytes) -> str:
        for secret in self.secrets:
            cmdline = cmdline.replace(secret, b"<SECRET>")
        return cmdline.replace(b"\0", b" ").decode(errors="replace")[:300]

    def _loop(self) -> None:
        own = os.getpid()
        while not self._stop.is_set():
            self.scans += 1
            for entry in Path("/proc").iterdir():
                if not entry.name.isdigit() or int(entry.name) == own:
                    continue
                try:
                    cmdline = (entry / "cmdline").read_bytes()
                except OSError:
                    continue
                if self._is_watched(cmdline):
                    self.watched.add(int(entry.name))
                for secret in self.secrets:
                    if secret in cmdline:
                        self.leaks.append(
                            f"pid {entry.name}: {len(cmdline)}-byte command line holds a secret: "
                            f"{self._redacted(cmdline)}"
                        )
            self._stop.wait(self.interval)
