"""CPU seconds and peak resident memory of process trees, sampled from ``/proc`` (psutil).

A :class:`ProcessMeter` follows a root process and every descendant it ever sees
(Spark's JVM, its Python daemon and workers), sampling every ``interval_s``: peak
RSS is the largest *sum* over the tree at one sample; CPU seconds are each process's
last observed user+system time, summed, also per kind of process (``kind_of``, e.g.
:func:`benchmarks.cpu_components.spark_process_kind`). :func:`cpu_seconds` reads a fixed
set of long-running processes (the stack's servers) before and after a run; it counts the
CPU of their children that already exited too (a PostgreSQL backend of a closed connection).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable

import psutil

from benchmarks.periodic_sampler import PeriodicSampler

KindOf = Callable[[list[str]], str | None]
"""A process's kind from its command line; None: keep the kind seen before (a zombie's
command line is empty)."""


class ProcessMeter(PeriodicSampler):
    """Samples a process tree in a background thread between ``start`` and ``stop``."""

    def __init__(
        self,
        root_pid: int,
        interval_s: float = 0.1,
        kind_of: KindOf | None = None,
        *,
        since_start: bool = False,
    ) -> None:
        """``since_start``: CPU counted from the first sample on for the processes already
        there (a long-lived server), instead of from their own starts."""
        self.root_pid = root_pid
        self.since_start = since_start
        self._base: dict[int, float] | None = None
        super().__init__(interval_s, "process-meter")
        self.kind_of = kind_of
        self.peak_rss_bytes = 0
        self._cpu: dict[int, float] = {}
        self._kind: dict[int, str] = {}

    @property
    def cpu_seconds(self) -> float:
        """User+system CPU seconds of every process seen in the tree."""
        return sum(self._spent(pid) for pid in self._cpu)

    def _spent(self, pid: int) -> float:
        return self._cpu[pid] - (self._base or {}).get(pid, 0.0)

    @property
    def cpu_seconds_by_kind(self) -> dict[str, float]:
        """:attr:`cpu_seconds` split by ``kind_of`` (``"all"``: without it, or never known)."""
        totals: dict[str, float] = defaultdict(float)
        for pid in self._cpu:
            totals[self._kind.get(pid, "all")] += self._spent(pid)
        return dict(totals)

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
                    kind = None if self.kind_of is None else self.kind_of(process.cmdline())
                    rss += process.memory_info().rss
                    times = process.cpu_times()
                    self._cpu[process.pid] = times.user + times.system
                    if kind is not None:  # the latest wins: spark-class turns into the JVM
                        self._kind[process.pid] = kind
            except psutil.Error:
                continue
        self.peak_rss_bytes = max(self.peak_rss_bytes, rss)
        if self._base is None:
            self._base = dict(self._cpu) if self.since_start else {}


def cpu_seconds(pids: Iterable[int]) -> float:
    """User+system CPU seconds of each process and its descendants, and of the children they
    reaped, summed (gone ones count 0)."""
    total = 0.0
    for pid in pids:
        try:
            root = psutil.Process(pid)
            for process in [root, *root.children(recursive=True)]:
                times = process.cpu_times()
                total += times.user + times.system + times.children_user + times.children_system
        except psutil.Error:
            continue
    return total
