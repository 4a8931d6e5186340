"""INFO fields as Prometheus metric families.

The collectors read a server's state through its INFO sections, the figures every Redis
operator already knows, so a metric and the INFO field it comes from never disagree. A
`Figure` names the field, the metric and its help text; Redis's words for states become
numbers (ok/up 1, err/down 0). A field the section does not show (the AOF's sizes while the
AOF is off, the link fields on a primary) gives no sample, as Prometheus expects of a series
that does not apply.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Final

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from node.server.info import InfoSections

PREFIX: Final = "rill_"

_WORDS: Final = {"ok": 1.0, "up": 1.0, "err": 0.0, "down": 0.0}


@dataclass(frozen=True, slots=True)
class Figure:
    field: str  # the INFO field
    name: str  # the metric's name after PREFIX (a counter's without `_total`, which is added)
    help: str
    counter: bool = False
    scale: float = 1.0  # to the metric's base unit (ms to seconds: 0.001)


def section(sections: InfoSections, name: str) -> dict[str, object]:
    """One INFO section's fields by name; empty when the server has no such section."""
    return {field: value for s in sections.selected([name]) for field, value in s.fields()}


def number(value: object) -> float:
    """An INFO value as a sample value."""
    if isinstance(value, str):
        word = _WORDS.get(value)
        return word if word is not None else float(value)
    if isinstance(value, (int, float)):
        return float(value)
    raise TypeError(f"not a number: {value!r}")


def families(fields: dict[str, object], figures: Iterable[Figure]) -> Iterator[Metric]:
    """One family per figure whose field is present."""
    for figure in figures:
        if figure.field in fields:
            value = number(fields[figure.field]) * figure.scale
            name = PREFIX + figure.name
            if figure.counter:
                yield CounterMetricFamily(name, figure.help, value=value)
            else:
                yield GaugeMetricFamily(name, figure.help, value=value)
