"""Chart geometry for server-rendered SVG: numbers only; the templates draw and escape.

Series colours are CSS classes (``s0`` .. ``s7``, ``d-allowed`` ...) so no style attribute is
ever written into the page (the Content-Security-Policy allows only the package's stylesheet).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

__all__ = ["Bar", "Chart", "Rows", "line_chart", "reason_rows", "stacked_chart"]

WIDTH, HEIGHT = 720, 220
_LEFT, _RIGHT, _TOP, _BOTTOM = 48, 20, 10, 24
_PLOT_W = WIDTH - _LEFT - _RIGHT
_PLOT_H = HEIGHT - _TOP - _BOTTOM
_PALETTE = 8


@dataclass(frozen=True)
class Bar:
    x: float
    y: float
    w: float
    h: float
    css: str
    title: str


@dataclass(frozen=True)
class Series:
    name: str
    css: str
    points: str  # "x,y x,y ..." for a polyline


@dataclass(frozen=True)
class Chart:
    """One chart: axes labels, lines and/or bars in a WIDTH x HEIGHT box."""

    title: str
    series: list[Series]
    bars: list[Bar]
    legend: list[tuple[str, str]]  # name, css class
    x_labels: list[tuple[float, str]]
    y_labels: list[tuple[float, str]]
    empty: bool
    width: int = WIDTH
    height: int = HEIGHT
    left: int = _LEFT
    bottom: int = HEIGHT - _BOTTOM
    right: int = WIDTH - _RIGHT


@dataclass(frozen=True)
class Rows:
    """Horizontal bars: (label, value, bar width in px, y) rows in a ``width`` x ``height`` box."""

    items: Sequence[tuple[str, int, float, float]]
    width: int = WIDTH
    height: int = 0
    label_w: int = 220


def _nice_max(value: float) -> float:
    if value <= 0:
        return 1.0
    step = 1.0
    while step * 10 <= value:
        step *= 10
    for m in (1, 2, 5, 10):
        if value <= m * step:
            return m * step
    return 10 * step


def _axes(
    start: float, bucket_s: int, buckets: int, top: float, unit: str
) -> tuple[list[tuple[float, str]], list[tuple[float, str]]]:
    fmt = "%H:%M" if bucket_s < 86_400 else "%m-%d"
    if buckets * bucket_s > 2 * 86_400:
        fmt = "%m-%d %Hh"
    xs = []
    for i in range(0, buckets + 1, max(1, buckets // 6)):
        when = dt.datetime.fromtimestamp(start + i * bucket_s, dt.UTC)
        xs.append((_LEFT + _PLOT_W * i / buckets, when.strftime(fmt)))
    ys = [(_TOP + _PLOT_H * (1 - k / 4), f"{top * k / 4:g}{unit}") for k in range(5)]
    return xs, ys


def line_chart(
    title: str,
    start: float,
    bucket_s: int,
    series: Mapping[str, Sequence[float | None]],
    *,
    unit: str = "",
    css: Mapping[str, str] | None = None,
) -> Chart:
    """Lines over time, one per named series; a None value breaks nothing (it is skipped)."""
    buckets = max((len(v) for v in series.values()), default=1) or 1
    top = _nice_max(max((x for v in series.values() for x in v if x is not None), default=0))
    lines, legend = [], []
    for n, (name, values) in enumerate(series.items()):
        cls = (css or {}).get(name, f"s{n % _PALETTE}")
        pts = [
            f"{_LEFT + _PLOT_W * (i + 0.5) / buckets:.1f},{_TOP + _PLOT_H * (1 - v / top):.1f}"
            for i, v in enumerate(values)
            if v is not None
        ]
        lines.append(Series(name, cls, " ".join(pts)))
        legend.append((name, cls))
    xs, ys = _axes(start, bucket_s, buckets, top, unit)
    empty = not any(x for v in series.values() for x in v if x)
    return Chart(title, lines, [], legend, xs, ys, empty)


def stacked_chart(
    title: str, start: float, bucket_s: int, series: Mapping[str, Sequence[int]]
) -> Chart:
    """Stacked bars per bucket, one segment per named series (CSS class ``d-<name>``)."""
    buckets = max((len(v) for v in series.values()), default=1) or 1
    totals = [sum(v[i] for v in series.values()) for i in range(buckets)]
    top = _nice_max(max(totals, default=0))
    bars = []
    w = _PLOT_W / buckets
    for i in range(buckets):
        base = 0
        for name, values in series.items():
            v = values[i]
            if not v:
                continue
            y0 = _TOP + _PLOT_H * (1 - (base + v) / top)
            h = _PLOT_H * v / top
            bars.append(Bar(_LEFT + w * i + w * 0.1, y0, w * 0.8, h, f"d-{name}", f"{name}: {v}"))
            base += v
    xs, ys = _axes(start, bucket_s, buckets, top, "")
    legend = [(name, f"d-{name}") for name in series]
    return Chart(title, [], bars, legend, xs, ys, not any(totals))


def reason_rows(counts: Sequence[tuple[str, int]]) -> Rows:
    """Refusals by reason, as bars scaled to the most frequent."""
    most = max((n for _, n in counts), default=0) or 1
    span = WIDTH - 220 - 60
    items = [(r, n, max(1.0, span * n / most), 8 + 24 * i) for i, (r, n) in enumerate(counts)]
    return Rows(items, height=16 + 24 * len(items))
