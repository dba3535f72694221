"""A small SVG plotting kit, drawn on the server: a plot area, its scales and axes.

No JavaScript and no external asset: each chart is one inline ``<svg>`` (the Epochs page
is shown in Airflow's sandboxed iframe, often on air-gapped installs). Text and axes use
``currentColor`` (the page's text colour, light or dark); series colours are mid-tones
readable on both backgrounds. Every value written into the markup goes through
:func:`html.escape`. :mod:`.charts` builds the Epochs page's charts from these parts.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from html import escape

#: Series colours (mid-tones: readable on a white and on a dark background).
PALETTE = (
    "#3182ce", "#dd6b20", "#38a169", "#d53f8c", "#805ad5", "#d69e2e", "#319795", "#e53e3e", "#718096",
)  # fmt: skip
"""Nine: a lag chart's total and its (at most) eight partitions each get their own."""
HATCH_ID = "eo-unknown-hatch"


def esc(value: object) -> str:
    """``value`` as text for markup or an attribute (None: empty)."""
    return escape("" if value is None else str(value), quote=True)


def nice_step(span: float, count: int = 4) -> float:
    """A round tick step (1, 2, 2.5 or 5 times a power of ten) cutting ``span`` into about
    ``count`` parts; 1 for an empty span."""
    if span <= 0:
        return 1.0
    raw = span / count
    power = 10 ** math.floor(math.log10(raw))
    return next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)


def number(value: float) -> str:
    """A tick or value label: ``1,250``, ``0.25``, ``12.5``."""
    if float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:,.3f}".rstrip("0").rstrip(".")


@dataclass(frozen=True)
class Plot:
    """A chart's geometry: the ``width`` x ``height`` viewBox, the margins around the plot
    area, and its y range ``[0, y_max]`` with ticks every ``y_step`` (see :meth:`for_values`)."""

    y_max: float
    y_step: float
    width: int = 560
    height: int = 220
    left: int = 64
    right: int = 16
    top: int = 12
    bottom: int = 42

    @classmethod
    def for_values(cls, values: Sequence[float]) -> Plot:
        """A plot whose y range holds every one of ``values`` (0 to a round maximum)."""
        top = max([0.0, *values])
        step = nice_step(top)
        return cls(y_max=max(step, step * math.ceil(top / step)), y_step=step)

    @property
    def inner_width(self) -> float:
        return float(self.width - self.left - self.right)

    @property
    def inner_height(self) -> float:
        return float(self.height - self.top - self.bottom)

    @property
    def baseline(self) -> float:
        """The y pixel of the value 0."""
        return float(self.height - self.bottom)

    def y(self, value: float) -> float:
        """The y pixel of ``value`` (clamped to the plot area)."""
        share = min(max(value, 0.0), self.y_max) / self.y_max
        return round(self.baseline - share * self.inner_height, 2)

    def x_share(self, share: float) -> float:
        """The x pixel at ``share`` (0..1) of the plot area's width."""
        return round(self.left + share * self.inner_width, 2)

    def band(self, index: int, count: int) -> tuple[float, float]:
        """The x pixel and width of bar ``index`` of ``count`` side by side (70% of its slot)."""
        slot = self.inner_width / max(count, 1)
        width = max(slot * 0.7, 1.0)
        return round(self.left + slot * index + (slot - width) / 2, 2), round(width, 2)

    def band_center(self, index: int, count: int) -> float:
        x, width = self.band(index, count)
        return round(x + width / 2, 2)


def time_share(moment: datetime, start: datetime, end: datetime) -> float:
    """Where ``moment`` lies between ``start`` and ``end`` (0..1; 1 when they are equal)."""
    span = (end - start).total_seconds()
    return 1.0 if span <= 0 else min(max((moment - start).total_seconds() / span, 0.0), 1.0)


def time_labels(plot: Plot, start: datetime, end: datetime, count: int = 4) -> list[tuple[float, str]]:
    """``count`` + 1 evenly spaced x labels from ``start`` to ``end`` (UTC ``HH:MM``; with
    the date when the span exceeds a day)."""
    layout = "%m-%d %H:%M" if (end - start).total_seconds() > 86400 else "%H:%M"
    labels = []
    for i in range(count + 1):
        moment = start + (end - start) * (i / count)
        labels.append((plot.x_share(i / count), moment.strftime(layout)))
    return labels


def axes(plot: Plot, y_title: str, x_labels: Sequence[tuple[float, str]], x_title: str) -> str:
    """Grid lines with the y ticks' labels, the two axes, the x labels and both titles."""
    parts = []
    left, right, base = plot.left, plot.width - plot.right, plot.baseline
    for i in range(round(plot.y_max / plot.y_step) + 1):
        value = plot.y_step * i
        y = plot.y(value)
        parts.append(f'<line class="grid" x1="{left}" x2="{right}" y1="{y}" y2="{y}"/>')
        label = esc(number(value))
        parts.append(f'<text class="tick" x="{left - 6}" y="{y + 4}" text-anchor="end">{label}</text>')
    parts.append(f'<line class="axis" x1="{left}" x2="{right}" y1="{base}" y2="{base}"/>')
    parts.append(f'<line class="axis" x1="{left}" x2="{left}" y1="{plot.top}" y2="{base}"/>')
    for x, text in x_labels:
        parts.append(f'<text class="tick" x="{x}" y="{base + 16}" text-anchor="middle">{esc(text)}</text>')
    middle_y = plot.top + plot.inner_height / 2
    parts.append(
        f'<text class="axis-title" x="14" y="{middle_y}" text-anchor="middle" '
        f'transform="rotate(-90 14 {middle_y})">{esc(y_title)}</text>'
    )
    parts.append(
        f'<text class="axis-title" x="{plot.x_share(0.5)}" y="{plot.height - 4}" '
        f'text-anchor="middle">{esc(x_title)}</text>'
    )
    return "".join(parts)


def svg(plot: Plot, label: str, body: str, *, hatch: bool = False) -> str:
    """The ``<svg>`` element (scales with its container) holding ``body``; ``label`` names
    it for screen readers. ``hatch`` defines the pattern of unknown values
    (``url(#HATCH_ID)``; one chart of a page defines it)."""
    defs = (
        f'<defs><pattern id="{HATCH_ID}" width="6" height="6" patternUnits="userSpaceOnUse" '
        'patternTransform="rotate(45)"><line x1="0" y1="0" x2="0" y2="6" stroke="currentColor" '
        'stroke-opacity="0.45" stroke-width="2"/></pattern></defs>'
        if hatch
        else ""
    )
    return (
        f'<svg class="chart-svg" viewBox="0 0 {plot.width} {plot.height}" role="img" '
        f'aria-label="{esc(label)}" xmlns="http://www.w3.org/2000/svg">{defs}{body}</svg>'
    )


def polyline(points: Sequence[tuple[float, float]], color: str) -> str:
    """A line through ``points`` (pixels); nothing for fewer than two."""
    if len(points) < 2:
        return ""
    path = " ".join(f"{x},{y}" for x, y in points)
    return f'<polyline class="series" fill="none" stroke="{color}" stroke-width="1.5" points="{path}"/>'


def attributes(values: dict[str, object]) -> str:
    """``data-*`` attributes (``None`` values left out), escaped."""
    return "".join(f' data-{name}="{esc(value)}"' for name, value in values.items() if value is not None)
