"""What a plan is made of: the cluster's members (fixed names, so a plan drawn from a seed means
the same thing on every target) and `Step`, one fault of a plan.

A step names its victim by role (`primary`, `replica`, resolved when it starts, from what the
sentinels say), by member name (`n3`, `s2`: composed plans draw them from the seed), or by what
the failover it is aimed at chose (`fenced-best`: the fenced replica the leader will promote;
`trigger-sentinel`: the sentinel whose event started the step). A step with a `trigger` waits,
from `at`, for one of those sentinel events (seen by the monitor) and starts on it; if none
comes by `until` it is skipped (recorded as such).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

NODES = 5
SENTINELS = 3
CLIENT_GROUPS = 2


def node_names(n: int = NODES) -> list[str]:
    return [f"n{k}" for k in range(1, n + 1)]


def sentinel_names(n: int = SENTINELS) -> list[str]:
    return [f"s{k}" for k in range(1, n + 1)]


def client_names(n: int = CLIENT_GROUPS) -> list[str]:
    return [f"c{k}" for k in range(1, n + 1)]


FAULTS = frozenset({
    # processes (nodes or sentinels)
    "kill", "crash", "pause", "kill-all", "bounce", "stale-sentinel", "clock-step", "clock-skew",
    "clock-drift",
    # disks (with the disk nemesis)
    "power-loss", "disk-full", "disk-eio",
    # links
    "partition", "isolate", "stall", "flap", "slow-links", "slow-member", "split-majority", "partition-bounce",
    "halves", "bridge", "one-way", "hide-from-sentinels",
})


@dataclass(frozen=True)
class Step:
    """One fault: starts `at` seconds into the workload (or, with a `trigger`, at the first
    such sentinel event after `at`, given up at `until`) and lasts `length` seconds."""

    at: float
    length: float
    fault: str  # one of FAULTS
    target: str = "primary"  # primary, replica, all, fenced-best, trigger-sentinel, or a member name
    params: dict[str, Any] = field(default_factory=dict)
    trigger: tuple[str, ...] = ()
    until: float | None = None


Plan = Callable[[random.Random, float], list[Step]]


def start_time(rng: random.Random) -> float:
    return round(rng.uniform(4.0, 6.0), 2)


def length_within(rng: random.Random, duration: float, start: float, wanted: float) -> float:
    """About `wanted` seconds, ending by `duration - 4` (time to heal before the producers stop)."""
    return round(min(wanted * rng.uniform(0.9, 1.1), duration - 4.0 - start), 2)
