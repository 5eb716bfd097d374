"""Small charts drawn server-side as SVG (no chart library, nothing fetched by the browser): a line over time."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from html import escape

WIDTH, HEIGHT, PAD = 560, 160, 32


def line_chart(points: Sequence[tuple[datetime, float]], label: str, y_max: float | None = None) -> str:
    """A polyline of (time, value) points with its first/last time and the top value on the axes."""
    title = f'<title>{escape(label)}</title>'
    if not points:
        return (f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{escape(label)}">{title}'
                f'<text x="{WIDTH / 2}" y="{HEIGHT / 2}" text-anchor="middle">no data yet</text></svg>')
    t0, t1 = points[0][0].timestamp(), points[-1][0].timestamp()
    span = max(t1 - t0, 1.0)
    top = y_max if y_max is not None else max(max(v for _, v in points), 1e-9)
    inner_w, inner_h = WIDTH - 2 * PAD, HEIGHT - 2 * PAD

    def xy(t: datetime, v: float) -> str:
        x = PAD + (t.timestamp() - t0) / span * inner_w
        y = PAD + inner_h - min(max(v / top, 0.0), 1.0) * inner_h
        return f"{x:.1f},{y:.1f}"

    line = " ".join(xy(t, v) for t, v in points)
    dots = "".join(f'<circle cx="{xy(t, v).split(",")[0]}" cy="{xy(t, v).split(",")[1]}" r="2"/>'
                   for t, v in points) if len(points) <= 60 else ""
    first, last = points[0][0].strftime("%m-%d %H:%M"), points[-1][0].strftime("%m-%d %H:%M")
    return (f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{escape(label)}">{title}'
            f'<line class="axis" x1="{PAD}" y1="{PAD + inner_h}" x2="{PAD + inner_w}" y2="{PAD + inner_h}"/>'
            f'<line class="axis" x1="{PAD}" y1="{PAD}" x2="{PAD}" y2="{PAD + inner_h}"/>'
            f'<text x="{PAD}" y="{HEIGHT - 8}">{escape(first)}</text>'
            f'<text x="{PAD + inner_w}" y="{HEIGHT - 8}" text-anchor="end">{escape(last)}</text>'
            f'<text x="{PAD - 4}" y="{PAD + 4}" text-anchor="end">{top:.3g}</text>'
            f'<polyline points="{line}"/>{dots}</svg>')


def lines_chart(series: dict[str, Sequence[tuple[datetime, float]]], label: str) -> str:
    """One step line per named series (counts that hold until the next change) over a shared time axis and scale
    (series i drawn with CSS class s<i>), with a legend beneath naming each series' last value."""
    points = [p for line in series.values() for p in line]
    title = f'<title>{escape(label)}</title>'
    if not points:
        return (f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{escape(label)}">{title}'
                f'<text x="{WIDTH / 2}" y="{HEIGHT / 2}" text-anchor="middle">no data yet</text></svg>')
    t0 = min(t for t, _ in points).timestamp()
    span = max(max(t for t, _ in points).timestamp() - t0, 1.0)
    top = max(max(v for _, v in points), 1.0)
    inner_w, inner_h = WIDTH - 2 * PAD, HEIGHT - 2 * PAD
    legend_h = 18
    lines, legend = [], []
    for i, (name, line) in enumerate(series.items()):
        coords = [(PAD + (t.timestamp() - t0) / span * inner_w, PAD + inner_h - min(max(v / top, 0.0), 1.0) * inner_h)
                  for t, v in line]
        # Steps: a count holds until the next decision changes it.
        steps = [p for j, (x, y) in enumerate(coords) for p in ([(x, coords[j - 1][1])] if j else []) + [(x, y)]]
        xy = " ".join(f"{x:.1f},{y:.1f}" for x, y in steps)
        if line:
            lines.append(f'<polyline class="s{i}" points="{xy}"><title>{escape(name)}</title></polyline>')
        x = PAD + i * 120
        legend.append(f'<rect class="s{i}" x="{x}" y="{HEIGHT + 4}" width="10" height="10"/>'
                      f'<text x="{x + 14}" y="{HEIGHT + 13}">{escape(name)} {line[-1][1] if line else 0:.0f}</text>')
    first = min(t for t, _ in points).strftime("%m-%d %H:%M")
    last = max(t for t, _ in points).strftime("%m-%d %H:%M")
    return (f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT + legend_h}" role="img" aria-label="{escape(label)}">'
            f'{title}<line class="axis" x1="{PAD}" y1="{PAD + inner_h}" x2="{PAD + inner_w}" y2="{PAD + inner_h}"/>'
            f'<line class="axis" x1="{PAD}" y1="{PAD}" x2="{PAD}" y2="{PAD + inner_h}"/>'
            f'<text x="{PAD}" y="{HEIGHT - 8}">{escape(first)}</text>'
            f'<text x="{PAD + inner_w}" y="{HEIGHT - 8}" text-anchor="end">{escape(last)}</text>'
            f'<text x="{PAD - 4}" y="{PAD + 4}" text-anchor="end">{top:.3g}</text>'
            f'{"".join(lines)}{"".join(legend)}</svg>')
