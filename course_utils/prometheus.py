"""A Prometheus text page (vLLM's ``/metrics``, Ray's metrics agent) read with prometheus_client's own parser.

The parser knows the format's corners (escaped label values, ``NaN``/``+Inf``, exemplars, ``# TYPE`` lines);
the course only picks samples by name. Sample names are as written on the page: a counter's end in ``_total``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

from prometheus_client.parser import text_string_to_metric_families


class Sample(NamedTuple):
    name: str
    labels: dict
    value: float


def samples(text: str, names: Iterable[str]) -> list[Sample]:
    """The samples of ``text`` whose name is one of ``names``, in page order."""
    wanted = set(names)
    return [Sample(s.name, dict(s.labels), float(s.value))
            for family in text_string_to_metric_families(text) for s in family.samples if s.name in wanted]
