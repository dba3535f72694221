"""The window the charts show: a time span back from now, or a pipeline's last N epochs.

Written ``<N>h`` (hours, 1..2160), ``<N>d`` (days, 1..90) or ``<N>e`` (the last N committed
epochs, 1..:data:`MAX_EPOCH_POINTS`); the page's form offers :data:`WINDOW_CHOICES`, the
JSON route accepts any such value. Every chart is bounded whatever the window: at most
:data:`MAX_EPOCH_POINTS` epochs (the newest), :data:`MAX_LAG_SAMPLES` lag samples (every
k-th when the window holds more) and :data:`MAX_LAG_PARTITIONS` partitions (those with the
largest lag in the newest sample), and each chart says when it shows less than the window.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta

MAX_EPOCH_POINTS = 500
MAX_LAG_SAMPLES = 300
MAX_LAG_PARTITIONS = 8
DEFAULT_WINDOW = "1d"
WINDOW_CHOICES = (
    ("1h", "last hour"),
    ("6h", "last 6 hours"),
    ("1d", "last day"),
    ("7d", "last week"),
    ("30d", "last 30 days"),
    ("50e", "last 50 epochs"),
    ("500e", "last 500 epochs"),
)
_UNITS = {"h": ("hours", 2160), "d": ("days", 90), "e": ("epochs", MAX_EPOCH_POINTS)}
_FORMAT = re.compile(r"^([1-9][0-9]{0,3})([hde])$")


@dataclass(frozen=True)
class ChartWindow:
    """A parsed window: ``span`` (a time window) or ``last_epochs`` (an epoch window)."""

    text: str
    span: timedelta | None = None
    last_epochs: int | None = None

    @classmethod
    def parse(cls, text: str) -> ChartWindow:
        """``"6h"``, ``"7d"``, ``"50e"`` ...; ``ValueError`` naming the accepted forms otherwise."""
        match = _FORMAT.match(text.strip())
        if match is None or int(match.group(1)) > _UNITS[match.group(2)][1]:
            limits = ", ".join(f"<N>{unit} ({name}, 1..{top})" for unit, (name, top) in _UNITS.items())
            raise ValueError(f"window must be one of {limits}; got {text!r}")
        count, unit = int(match.group(1)), match.group(2)
        if unit == "e":
            return cls(f"{count}e", last_epochs=count)
        span = timedelta(hours=count) if unit == "h" else timedelta(days=count)
        return cls(f"{count}{unit}", span=span)

    def since(self, now: datetime) -> datetime | None:
        """The window's start for a time window (``now`` minus its span); None for an epoch window."""
        return None if self.span is None else now - self.span

    @property
    def label(self) -> str:
        """How the page names it: ``last day``, ``last 12 hours``, ``last 50 epochs``."""
        named = dict(WINDOW_CHOICES).get(self.text)
        if named:
            return named
        count, unit = int(self.text[:-1]), _UNITS[self.text[-1]][0]
        return f"last {count} {unit}"


#: The window the page and the JSON route use when none is asked for.
THE_DEFAULT = ChartWindow.parse(DEFAULT_WINDOW)
