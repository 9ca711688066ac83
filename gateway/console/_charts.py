"""Charts as numbers for server-side SVG: coordinates computed here, drawn by
templates/_charts.html, each chart's numbers also shown in a table beside it.

Only numbers this module formats reach an SVG attribute; labels are text
nodes, escaped like every other value.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

__all__ = ["LATENCY_BUCKETS_MS", "Chart", "bars", "latency_histogram", "line"]

WIDTH = 640
HEIGHT = 200
PAD = 32


@dataclass
class Chart:
    title: str
    width: int = WIDTH
    height: int = HEIGHT
    points: str = ""  # the polyline ("x,y x,y")
    marks: list[dict[str, Any]] = field(default_factory=list)  # x, y, label, value
    spans: list[dict[str, Any]] = field(default_factory=list)  # x, y1, y2 (intervals)
    bars: list[dict[str, Any]] = field(default_factory=list)  # x, y, w, h, label, value
    ceiling: dict[str, Any] | None = None  # a horizontal line: y, label
    y_max: str = "1"


def _number(value: Any) -> float | None:
    try:
        number = float(Decimal(str(value)))
    except ArithmeticError:
        return None
    return number if number == number and abs(number) != float("inf") else None


def line(
    title: str,
    values: Sequence[tuple[str, Any, Any, Any]],
    *,
    y_max: Any = 1,
    ceiling: tuple[str, Any] | None = None,
) -> Chart:
    """A line over `values` (label, value, interval low, interval high), y from 0 to y_max."""
    top = _number(y_max) or 1.0
    if ceiling is not None:
        top = max(top, _number(ceiling[1]) or 0.0)
    top = max(top, *[(_number(v[1]) or 0.0) for v in values], 1e-12) if values else top
    chart = Chart(title, y_max=f"{top:g}")
    inner_w, inner_h = WIDTH - 2 * PAD, HEIGHT - 2 * PAD
    step = inner_w / max(1, len(values) - 1)

    def y_of(value: float) -> float:
        return round(PAD + inner_h * (1 - min(max(value / top, 0.0), 1.0)), 1)

    coords = []
    for index, (label, value, low, high) in enumerate(values):
        x = round(PAD + step * index if len(values) > 1 else WIDTH / 2, 1)
        number = _number(value)
        if number is None:
            continue
        y = y_of(number)
        coords.append(f"{x},{y}")
        chart.marks.append({"x": x, "y": y, "label": label, "value": value})
        low_n, high_n = _number(low), _number(high)
        if low_n is not None and high_n is not None:
            chart.spans.append({"x": x, "y1": y_of(low_n), "y2": y_of(high_n)})
    chart.points = " ".join(coords)
    if ceiling is not None and _number(ceiling[1]) is not None:
        chart.ceiling = {"y": y_of(_number(ceiling[1]) or 0.0), "label": ceiling[0]}
    return chart


def bars(title: str, values: Sequence[tuple[str, Any]]) -> Chart:
    """Vertical bars of `values` (label, count or amount), from 0 to the largest."""
    numbers = [(_number(v) or 0.0) for _, v in values]
    top = max([*numbers, 1e-12])
    chart = Chart(title, y_max=f"{top:g}")
    inner_w, inner_h = WIDTH - 2 * PAD, HEIGHT - 2 * PAD
    slot = inner_w / max(1, len(values))
    for index, ((label, value), number) in enumerate(zip(values, numbers, strict=True)):
        h = round(inner_h * max(number, 0.0) / top, 1)
        chart.bars.append(
            {
                "x": round(PAD + slot * index + slot * 0.1, 1),
                "y": round(PAD + inner_h - h, 1),
                "w": round(slot * 0.8, 1),
                "h": h,
                "label": label,
                "value": value,
            }
        )
    return chart


LATENCY_BUCKETS_MS = (10, 50, 100, 250, 500, 1000, 5000)


def latency_histogram(rows: Sequence[dict[str, Any]]) -> list[tuple[str, int]]:
    """Calls (ledger rows, eval cells: anything with `latency_ms`) by latency bucket
    (upper bounds in ms; the last is open)."""
    counts = Counter[str]()
    labels = [f"≤ {b} ms" for b in LATENCY_BUCKETS_MS] + [f"> {LATENCY_BUCKETS_MS[-1]} ms"]
    for row in rows:
        latency = row.get("latency_ms")
        if not isinstance(latency, int | float | Decimal) or isinstance(latency, bool):
            continue
        index = next((i for i, b in enumerate(LATENCY_BUCKETS_MS) if latency <= b), -1)
        counts[labels[index]] += 1
    return [(label, counts[label]) for label in labels]
