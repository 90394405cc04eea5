"""Geometry of the inline SVG charts on the results page (templates draw; this only measures)."""

from dataclasses import dataclass

LABEL_WIDTH = 250  # px left of the plot for row labels
PLOT_WIDTH = 440
ROW_HEIGHT = 30
BAR_HEIGHT = 16
TOP = 24  # room for the axis labels


def _x(rate: float) -> float:
    return round(LABEL_WIDTH + rate * PLOT_WIDTH, 1)


@dataclass(frozen=True)
class BarRow:
    label: str
    value_text: str
    y: float
    bar_width: float
    whisker: tuple[float, float] | None
    tick_y: tuple[float, float]


@dataclass(frozen=True)
class BarChart:
    width: int
    height: int
    rows: list[BarRow]
    label_x: int
    plot_x: int
    half_x: float
    ticks: list[tuple[float, str]]
    bar_height: int


def bar_chart(rows: list[tuple[str, float | None, float | None, float | None]]) -> BarChart:
    """Horizontal bars on a 0-100% scale: (label, value, whisker low, whisker high) per row."""
    laid_out = []
    for i, (label, value, low, high) in enumerate(rows):
        y = TOP + i * ROW_HEIGHT
        laid_out.append(
            BarRow(
                label=label,
                value_text="–" if value is None else f"{value:.0%}",
                y=y,
                bar_width=0 if value is None else round(value * PLOT_WIDTH, 1),
                whisker=None if low is None or high is None else (_x(low), _x(high)),
                tick_y=(y + 2, y + BAR_HEIGHT - 2),
            )
        )
    return BarChart(
        width=LABEL_WIDTH + PLOT_WIDTH + 60,
        height=TOP + len(rows) * ROW_HEIGHT + 4,
        rows=laid_out,
        label_x=LABEL_WIDTH - 8,
        plot_x=LABEL_WIDTH,
        half_x=_x(0.5),
        ticks=[(_x(t / 4), f"{t * 25}%") for t in range(5)],
        bar_height=BAR_HEIGHT,
    )


@dataclass(frozen=True)
class Segment:
    label: str
    count: int
    x: float
    width: float
    css: str


STACK_WIDTH = LABEL_WIDTH + PLOT_WIDTH


def stacked_bar(parts: list[tuple[str, int, str]], width: int = STACK_WIDTH) -> list[Segment]:
    """One bar split into (label, count, css class) segments proportional to the counts."""
    total = sum(count for _, count, _ in parts) or 1
    segments, x = [], 0.0
    for label, count, css in parts:
        w = round(count / total * width, 1)
        segments.append(Segment(label, count, round(x, 1), w, css))
        x += w
    return segments


def _share(wins: int, losses: int) -> float | None:
    return wins / (wins + losses) if wins + losses else None


def results_charts(results: dict) -> dict:
    """The charts of the results page, from evaluation.results.campaign_results' figures."""
    systems, c = results["systems"], results["composition"]
    return {
        "win_chart": bar_chart(
            [(s["name"], s["win_rate"], s["bootstrap_ci_low"], s["bootstrap_ci_high"]) for s in systems]
        ),
        "decisive_chart": bar_chart(
            [(s["name"], _share(s["wins"], s["losses"]), s["ci_low"], s["ci_high"]) for s in systems]
        ),
        "composition_bar": stacked_bar(
            [
                (f"{results['first']} better", c["first_wins"], "seg-first"),
                ("tie", c["ties"], "seg-tie"),
                (f"{results['second']} better", c["second_wins"], "seg-second"),
                ("both bad", c["both_bad"], "seg-bad"),
            ]
        ),
        "stack_width": STACK_WIDTH,
        "attribute_chart": bar_chart(
            [(r["group"], r["win_rate"], r["ci_low"], r["ci_high"]) for r in results["per_attribute"]]
        ),
    }
