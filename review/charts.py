"""Inline SVG charts (no CDN, no JavaScript): geometry computed here, drawn by a template."""

from dataclasses import dataclass

BAR = 14
GAP = 6
GROUP_GAP = 14
LABEL_WIDTH = 170
PLOT_WIDTH = 420
SERIES_CLASSES = ("s0", "s1", "s2")


@dataclass
class Bar:
    y: int
    width: float
    css: str
    label: str
    text_x: float


@dataclass
class Group:
    label: str
    y: int
    bars: list[Bar]


@dataclass
class Chart:
    title: str
    groups: list[Group]
    legend: list[tuple[str, str]]
    height: int
    width: int = LABEL_WIDTH + PLOT_WIDTH + 60
    label_width: int = LABEL_WIDTH
    plot_width: int = PLOT_WIDTH


def grouped_bars(
    title: str,
    labels: list[str],
    series: list[tuple[str, list[float | None]]],
    scale: float | None = None,
    fmt: str = "{:.2f}",
) -> Chart:
    """Horizontal bars: one group per label, one bar per series; None draws no bar and says so."""
    top = max([v for _, values in series for v in values if v is not None] + [0.0])
    scale = scale or top or 1.0
    groups, y = [], 4
    for i, label in enumerate(labels):
        bars = []
        for s, (_, values) in enumerate(series):
            value = values[i]
            width = 0.0 if value is None else PLOT_WIDTH * min(value, scale) / scale
            bars.append(
                Bar(
                    y=y + s * (BAR + 2),
                    width=round(width, 1),
                    css=SERIES_CLASSES[s % len(SERIES_CLASSES)],
                    label="-" if value is None else fmt.format(value),
                    text_x=round(LABEL_WIDTH + width + 4, 1),
                )
            )
        groups.append(Group(label=label, y=y + len(series) * (BAR + 2) // 2 + 4, bars=bars))
        y += len(series) * (BAR + 2) + GROUP_GAP
    legend = [(name, SERIES_CLASSES[s % len(SERIES_CLASSES)]) for s, (name, _) in enumerate(series)]
    return Chart(title=title, groups=groups, legend=legend, height=y + GAP)
