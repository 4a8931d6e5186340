"""Scraping a metrics endpoint over real HTTP, as Prometheus does, and reading its samples."""

from __future__ import annotations

import urllib.request

from prometheus_client.parser import text_string_to_metric_families

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def scrape(port: int, host: str = "127.0.0.1", query: str = "") -> Samples:
    """Every sample of one scrape, by name and labels (parsed by prometheus_client's parser,
    so a malformed exposition fails here)."""
    with urllib.request.urlopen(f"http://{host}:{port}/metrics{query}", timeout=10) as response:
        assert response.status == 200
        assert response.headers["Content-Type"].startswith("text/plain")
        text = response.read().decode("utf-8")
    samples: Samples = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            samples[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return samples


def value(samples: Samples, name: str, **labels: str) -> float | None:
    """One sample's value; None when the scrape has no such sample."""
    return samples.get((name, tuple(sorted(labels.items()))))


def labelled(samples: Samples, name: str, label: str) -> dict[str, float]:
    """The samples of `name` by the value of its one label `label`."""
    return {dict(labels)[label]: v for (n, labels), v in samples.items() if n == name}
