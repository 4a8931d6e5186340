"""The sentinels bench's summary: medians per sentinel kind and fault, and Rill's lag behind
redis-sentinel (the issue's target is at most +1 s)."""

from __future__ import annotations

from bench.sentinels import summarize, table


def test_summary_takes_medians_and_the_difference() -> None:
    rounds = [
        {"sentinel": "redis", "fault": "kill", "failover_s": 3.0, "switch_master_s": 2.9},
        {"sentinel": "redis", "fault": "kill", "failover_s": 3.4, "switch_master_s": 3.3},
        {"sentinel": "redis", "fault": "kill", "failover_s": 3.2, "switch_master_s": None},
        {"sentinel": "rill", "fault": "kill", "failover_s": 3.5, "switch_master_s": 3.4},
        {"sentinel": "rill", "fault": "stop", "failover_s": 4.0, "switch_master_s": 3.9},
    ]
    [kill, stop] = summarize(rounds)
    assert kill["redis"]["failover_s_median"] == 3.2 and kill["redis"]["switch_master_s_median"] == 3.1
    assert kill["rill"]["failover_s"] == [3.5]
    assert kill["rill_minus_redis_s"] == 0.3
    assert stop["fault"] == "stop" and "redis" not in stop and "rill_minus_redis_s" not in stop
    text = table([kill, stop], [{"sentinel": "rill", "cpu_ms_per_s": 4.2, "rss_mib": 42.0}])
    assert "rill - redis" in text and "+0.30" in text and "4.20" in text
