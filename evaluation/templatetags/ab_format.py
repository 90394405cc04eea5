"""Number formats of the results page: percentages, intervals, p-values, coefficients."""

from django import template

register = template.Library()
DASH = "–"


@register.filter
def pct(value, digits: int = 1) -> str:
    return DASH if value is None else f"{value * 100:.{digits}f}%"


@register.filter
def interval(pair) -> str:
    low, high = pair
    return DASH if low is None or high is None else f"{low * 100:.1f}–{high * 100:.1f}%"


@register.filter
def pvalue(value) -> str:
    if value is None:
        return DASH
    return "< 0.001" if value < 0.001 else f"{value:.3f}"


@register.filter
def coef(value) -> str:
    return DASH if value is None else f"{value:.3f}"


@register.filter
def pair(first, second):
    return (first, second)
