"""bench/failover.py's summary: medians per kind and fault, and Rill / redis-server."""

from __future__ import annotations

from bench.failover import summary, table


def _row(kind: str, fault: str, promoted: float, failover: float) -> dict[str, object]:
    return {"kind": kind, "fault": fault, "promoted_s": promoted, "failover_s": failover, "demoted_s": 10.0}


def test_the_summary_has_medians_and_the_rill_to_redis_ratio() -> None:
    rows = [_row("redis", "kill", 2.0, 2.2), _row("redis", "kill", 3.0, 3.2), _row("redis", "kill", 2.5, 2.6),
            _row("rill", "kill", 2.0, 3.0), _row("rill", "kill", 2.4, 2.4), _row("rill", "kill", 9.0, 9.9)]
    [entry] = summary(rows, ["redis", "rill"], ["kill"])  # type: ignore[arg-type]
    assert (entry["redis_failover_s"], entry["rill_failover_s"]) == (2.6, 3.0)
    assert entry["ratio_failover_s"] == round(3.0 / 2.6, 2) and entry["ratio_promoted_s"] == round(2.4 / 2.5, 2)
    assert "kill" in table([entry], ["redis", "rill"]).splitlines()[1]


def test_one_kind_alone_has_no_ratio() -> None:
    [entry] = summary([_row("redis", "pause", 1.0, 1.5)], ["redis"], ["pause"])  # type: ignore[arg-type]
    assert entry["redis_failover_s"] == 1.5 and "ratio_failover_s" not in entry
