"""Scenario plans: reproducible from the seed, within the run, and every fault kind known to
the nemesis."""

from __future__ import annotations

import random

import pytest

from chaos.scenarios import SCENARIOS
from chaos.steps import FAULTS
from chaos.workload import stream_entries


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_a_plan_is_the_same_for_the_same_seed_and_ends_before_the_producers_stop(name: str) -> None:
    plan = SCENARIOS[name].plan
    for duration in (20.0, 24.0, 60.0):
        steps = plan(random.Random(7), duration)
        assert steps == plan(random.Random(7), duration)
        assert steps
        for step in steps:
            assert step.at >= 4.0 and step.length > 0
            assert step.at + step.length <= duration - 4.0 + 1e-9
            assert step.fault in FAULTS


def test_seeds_change_the_schedule() -> None:
    plans = {tuple((s.at, s.length) for s in SCENARIOS["kill-primary"].plan(random.Random(seed), 24.0))
             for seed in range(5)}
    assert len(plans) == 5


def test_stream_replies_parse_in_resp2_and_resp3() -> None:
    resp2 = [["chaos", [["1-0", ["v", "a"]], ["2-0", ["v", "b"]]]]]
    resp3 = {"chaos": [["1-0", ["v", "a"]], ["2-0", ["v", "b"]]]}
    assert stream_entries(resp2) == stream_entries(resp3) == [["1-0", "a"], ["2-0", "b"]]
    assert stream_entries(None) == []
