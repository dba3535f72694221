"""CPU seconds and peak resident memory of process trees, sampled from ``/proc`` (psutil).

A :class:`ProcessMeter` follows a root process and every descendant it ever sees
(Spark's JVM, its Python daemon and workers), sampling every ``interval_s``: peak
RSS is the largest *sum* over the tree at one sample; CPU seconds are each process's
last observed user+system time, summed. :func:`cpu_seconds` reads a fixed set of
long-running processes (the stack's servers) before and after a run.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

import psutil


class ProcessMeter:
    """Samples a process tree in a background thread between ``start`` and ``stop``."""

    def __init__(self, root_pid: int, interval_s: float = 0.1) -> None:
        self.root_pid = root_pid
        self.interval_s = interval_s
        self.peak_rss_bytes = 0
        self._cpu: dict[int, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="process-meter", daemon=True)

    def start(self) -> ProcessMeter:
        """Start sampling; returns self."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop sampling (one last sample is taken first)."""
        self._stop.set()
        self._thread.join()

    @property
    def cpu_seconds(self) -> float:
        """User+system CPU seconds of every process seen in the tree."""
        return sum(self._cpu.values())

    def _run(self) -> None:
        while True:
            self._sample()
            if self._stop.wait(self.interval_s):
                return

    def _sample(self) -> None:
        try:
            root = psutil.Process(self.root_pid)
            tree = [root, *root.children(recursive=True)]
        except psutil.Error:
            return
        rss = 0
        for process in tree:
            try:
                with process.oneshot():
                    rss += process.memory_info().rss
                    times = process.cpu_times()
                    self._cpu[process.pid] = times.user + times.system
            except psutil.Error:
                continue
        self.peak_rss_bytes = max(self.peak_rss_bytes, rss)


def cpu_seconds(pids: Iterable[int]) -> float:
    """User+system CPU seconds of each process and its descendants, summed (gone ones count 0)."""
    total = 0.0
    for pid in pids:
        try:
            root = psutil.Process(pid)
            for process in [root, *root.children(recursive=True)]:
                times = process.cpu_times()
                total += times.user + times.system
        except psutil.Error:
            continue
    return total
