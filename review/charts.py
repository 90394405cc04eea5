"""Inline SVG charts (no CDN, no JavaScript): geometry computed here, drawn by a template."""

from dataclasses import dataclass

BAR = 14
GAP = 6
GROUP_GAP = 14
LABEL_WIDTH = 170
PLOT_WIDTH = 420
SERIES_CLASSES = ("s0", "s1", "s2", "s3")


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


# The reliability diagram: confidence bins along x, the share correct up y, the diagonal is
# perfect calibration (a bar below it: the run was surer than it was right).
PLOT = 300
MARGIN_LEFT = 36
MARGIN_TOP = 14
MARGIN_BOTTOM = 34


@dataclass
class Column:
    x: float
    y: float
    width: float
    height: float
    label: str  # the bin's range, share correct and count, for the tooltip
    count_label: str
    count_x: float
    count_y: float
    tick_x: float
    tick: str


@dataclass
class Reliability:
    title: str
    css: str
    columns: list[Column]
    note: str
    run_pk: int = 0
    plot: int = PLOT
    left: int = MARGIN_LEFT
    top: int = MARGIN_TOP
    width: int = MARGIN_LEFT + PLOT + 12
    height: int = MARGIN_TOP + PLOT + MARGIN_BOTTOM

    @property
    def bottom(self) -> int:
        return self.top + self.plot

    @property
    def right(self) -> int:
        return self.left + self.plot


def reliability_diagram(title: str, bins, note: str, series: int = 0, run_pk: int = 0) -> Reliability:
    """`bins`: objects with low, high, values and share_correct (review.quality.Bin); an empty bin
    draws no column and its count says 0."""
    step = PLOT / len(bins) if bins else PLOT
    columns = []
    for i, b in enumerate(bins):
        share = b.share_correct or 0.0
        height = round(PLOT * share, 1)
        x = MARGIN_LEFT + i * step
        columns.append(
            Column(
                x=round(x + 1, 1),
                y=round(MARGIN_TOP + PLOT - height, 1),
                width=round(step - 2, 1),
                height=height if b.values else 0.0,
                label=(
                    f"confidence {b.low:.1f}-{b.high:.1f}: "
                    + (f"{share:.0%} correct of {b.values}" if b.values else "no values")
                ),
                count_label=str(b.values),
                count_y=MARGIN_TOP + PLOT + 26,
                tick_x=round(x, 1),
                count_x=round(x + step / 2, 1),
                tick=f"{b.low:.1f}",
            )
        )
    return Reliability(
        title=title,
        css=SERIES_CLASSES[series % len(SERIES_CLASSES)],
        columns=columns,
        note=note,
        run_pk=run_pk,
    )
