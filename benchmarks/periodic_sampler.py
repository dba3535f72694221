"""A background thread that calls :meth:`PeriodicSampler._sample` every ``interval_s``
between :meth:`~PeriodicSampler.start` and :meth:`~PeriodicSampler.stop` (the meters of
:mod:`benchmarks.process_meter` and :mod:`benchmarks.spark_memory`)."""

from __future__ import annotations

import threading
from typing import Self


class PeriodicSampler:
    """Samples in a daemon thread named ``name``; :meth:`stop` takes one last sample first."""

    def __init__(self, interval_s: float, name: str) -> None:
        self.interval_s = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> Self:
        """Start sampling; returns self."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop sampling (after one last sample); nothing to wait for when it never started."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    def _run(self) -> None:
        while True:
            self._sample()
            if self._stop.wait(self.interval_s):
                return

    def _sample(self) -> None:
        raise NotImplementedError
