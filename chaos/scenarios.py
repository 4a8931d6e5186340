"""The scenarios: which faults, when, for how long (`nemesis` carries them out).

A scenario's plan is drawn from a seeded random generator: the same seed gives the same
schedule, lengths and choices (which replica, how fast a link flaps). Targets are named by
role ("primary", "replica") and resolved when the fault starts, from what the sentinels say,
so a plan means the same thing on every target. Plans assume a workload of at least 20 s and
end every fault by `duration - 4` s, so the cluster has time to heal before the producers stop.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from chaos.composed import composed
from chaos.steps import Plan, Step, length_within, start_time
from chaos.targets import Settings


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    plan: Plan
    settings: Settings = Settings()
    # What the scenario exists to show (the smokes and the soak check it): "loses-majority"
    # means a target without fenced mode should lose WAIT-majority writes here.
    expect: str = ""


_start = start_time
_length = length_within


def _one(fault: str, wanted: float, target: str = "primary", **params: Any) -> Plan:
    def plan(rng: random.Random, duration: float) -> list[Step]:
        start = _start(rng)
        return [Step(start, _length(rng, duration, start, wanted), fault, target,
                     {"pick": round(rng.random(), 4), **params})]
    return plan


def _flap(rng: random.Random, duration: float) -> list[Step]:
    start = _start(rng)
    return [Step(start, _length(rng, duration, start, 12.0), "flap", "primary",
                 {"period": round(rng.uniform(0.5, 1.0), 2)})]


def _aimed(fault: str, trigger: tuple[str, ...], target: str, wanted: float, first: str = "isolate",
           **params: Any) -> Plan:
    """A fault aimed at a failover phase: the primary isolated (clients c1 still reach it) for
    12 s to start a failover, and, on the first `trigger` event of that failover, `fault` on
    `target` for about `wanted` seconds."""
    def plan(rng: random.Random, duration: float) -> list[Step]:
        start = _start(rng)
        cut = _length(rng, duration, start, 12.0)
        return [Step(start, cut, first, "primary", {"pick": round(rng.random(), 4)}),
                Step(start, round(min(wanted, duration - 4.0 - start), 2), fault, target, params, trigger=trigger,
                     until=round(start + cut, 2))]
    return plan


def _aimed_clock(rng: random.Random, duration: float) -> list[Step]:
    steps = _aimed("clock-step", ("+failover-state-wait-lease", "+failover-state-select-slave"), "trigger-sentinel",
                   0.1, first="hide-from-sentinels")(rng, duration)
    # 0.8-1.9 s: under the 2 s that trigger TILT, and most of the 1.1 s a 1 s lease makes the
    # leader wait (a smaller step shortens the wait by less than the old lease's remaining slack)
    seconds = round(rng.uniform(0.8, 1.9), 2)
    return [steps[0], Step(steps[1].at, steps[1].length, "clock-step", steps[1].target, {"seconds": seconds},
                           trigger=steps[1].trigger, until=steps[1].until)]


def _drift_in_lease_wait(leader: float, primary: float) -> Plan:
    """The primary cut from the sentinels and clients c2 only (it keeps its replicas, so its lease,
    until they are fenced), its monotonic clocks running at `primary` times real time from 0.5 s
    later on; the leader's at `leader` from its `+elected-leader` (the FENCE round and the whole lease
    wait). Fenced mode's lease holds while leader / primary <= (1+ρ)/(1-ρ) (docs/safety.md)."""
    def plan(rng: random.Random, duration: float) -> list[Step]:
        start = _start(rng)
        cut = _length(rng, duration, start, 12.0)
        rest = round(duration - 4.0 - start, 2)
        # the primary's drift 0.5 s after the cut (well before the sentinels' down-after ends),
        # so the cut is the run's first fault whatever the threads' timing
        return [Step(start, cut, "hide-from-sentinels", "primary"),
                Step(round(start + 0.5, 2), round(rest - 0.5, 2), "clock-drift", "primary", {"rate": primary}),
                Step(start, round(min(8.0, rest), 2), "clock-drift", "trigger-sentinel", {"rate": leader},
                     trigger=("+elected-leader",), until=round(start + cut, 2))]
    return plan


def _clock_steps(rng: random.Random, duration: float) -> list[Step]:
    start = _start(rng)
    cut = _length(rng, duration, start, 12.0)
    steps = [Step(start, cut, "partition", "primary", {"pick": round(rng.random(), 4)})]
    members = [f"n{k}" for k in range(1, 6)] + [f"s{k}" for k in range(1, 4)]
    at = start
    while at < start + cut - 1.0:
        sign = rng.choice([1, -1])
        steps.append(Step(round(at, 2), 0.1, "clock-step", rng.choice(members),
                          {"seconds": round(sign * rng.uniform(0.2, 5.0), 2)}))
        at += 1.0
    return steps


def _stale_sentinel(rng: random.Random, duration: float) -> list[Step]:
    """A first failover (the primary isolated); once it ended, a sentinel SIGKILLed and
    restarted from the config it had before it (the old primary, the old epoch); then the new
    primary isolated, for a second failover the restarted sentinel takes part in."""
    start = _start(rng)
    first = _length(rng, duration, start, 7.0)
    second_at = round(start + first + 1.0, 2)
    return [Step(start, first, "isolate", "primary"),
            Step(start, 0.5, "stale-sentinel", f"s{1 + int(rng.random() * 3)}",
                 {"config": rng.choice(["ready", "initial"])}, trigger=("+failover-end", "+switch-master"),
                 until=round(start + first, 2)),
            Step(second_at, max(1.0, round(duration - 4.0 - second_at, 2)), "isolate", "primary")]


def _lagging_then_crash(rng: random.Random, duration: float) -> list[Step]:
    start = _start(rng)
    slow = _length(rng, duration, start, 12.0)
    crash_at = round(start + slow / 3, 2)
    return [Step(start, slow, "slow-links", "all", {"latency_ms": 150, "jitter_ms": 50, "kb_per_s": 64}),
            Step(crash_at, round(min(10.0, duration - 4.0 - crash_at), 2), "crash", "primary")]


SCENARIOS: dict[str, Scenario] = {s.name: s for s in [
    Scenario("kill-primary", "SIGKILL the primary, restart it 10 s later", _one("kill", 10.0)),
    Scenario("pause-primary", "SIGSTOP the primary for 10 s (past down-after-milliseconds), then SIGCONT",
             _one("pause", 10.0)),
    Scenario("pause-primary-short", "SIGSTOP the primary for 1 s (under down-after-milliseconds)",
             _one("pause", 1.0)),
    Scenario("partition-primary", "minority partition: the primary, one replica, sentinel s1 and clients c1 "
             "cut from the rest for 12 s (blackhole: connections stay open)", _one("partition", 12.0)),
    Scenario("partition-primary-min-replicas", "partition-primary with min-replicas-to-write 2 and "
             "min-replicas-max-lag 3 (Redis's documented bound on a cut-off primary)", _one("partition", 12.0),
             Settings(min_replicas_to_write=2, min_replicas_max_lag=3)),
    Scenario("isolate-primary", "the primary cut from every node, sentinel and client group c2 for 12 s; "
             "clients c1 still reach it", _one("isolate", 12.0)),
    Scenario("stall-primary", "the primary's data to the other nodes and the sentinels stops for 12 s without "
             "the connections closing (what it receives still arrives); clients unaffected", _one("stall", 12.0)),
    Scenario("partition-replica", "one replica cut from everyone for 10 s", _one("isolate", 10.0, "replica")),
    Scenario("flap-primary", "the primary's links to the nodes and sentinels go down and up every 0.5-1 s "
             "for 12 s", _flap),
    Scenario("crash-primary", "the primary's host crashes: SIGSTOP, every link to it cut (what is in flight "
             "is dropped), SIGKILL; back 10 s later", _one("crash", 10.0)),
    Scenario("lagging-replicas-crash-primary", "150 ms (±50) latency and 64 KB/s on every link between nodes "
             "for 12 s; the primary's host crashes a third of the way in, back 10 s later", _lagging_then_crash),
    Scenario("restart-all-everysec", "SIGKILL every node at once, restart them 2 s later (appendfsync everysec)",
             _one("kill-all", 2.0, "all")),
    Scenario("restart-all-always", "SIGKILL every node at once, restart them 2 s later (appendfsync always)",
             _one("kill-all", 2.0, "all"), Settings(appendfsync="always")),
    # -- the discriminating ones (docs/safety.md, *Fenced mode*) --
    Scenario("split-majority", "the primary keeps floor(N/2) replicas (a majority of the nodes with it) and "
             "clients c1; every sentinel, the other replicas and clients c2 are cut off from them for 12 s. "
             "Sentinel promotes a replica of the minority side: WAIT-majority writes on the primary's side are "
             "lost; fenced mode cannot fence a majority and must not promote", _one("split-majority", 12.0),
             expect="loses-majority"),
    # The lease is 3 s here (the nodes' and the sentinels'): on this 2-core machine a restarted
    # Rill node needs 1-2 s to answer again, and only restarts within one lease of each other
    # can make one replica look like two.
    Scenario("partition-primary-bouncing-replica", "partition-primary with a 3 s lease, and the replica on "
             "the primary's side SIGKILLed 0.5 s after each restart, throughout: a restarted replica must not "
             "count twice towards the primary's lease (G2)", _one("partition-bounce", 12.0, period=0.5),
             Settings(lease_ms=3000)),
    Scenario("kill-chosen-replica-in-lease-wait", "the primary isolated; when the leader enters the lease "
             "wait (fenced) or selects a replica (default), the replica it will promote is SIGKILLed and "
             "restarted 0.5 s later", _aimed("kill", ("+failover-state-wait-lease", "+failover-state-select-slave"),
                                             "fenced-best", 0.5)),
    Scenario("partition-chosen-replica-in-lease-wait", "the primary isolated; when the leader enters the lease "
             "wait (fenced) or selects a replica (default), the replica it will promote is cut from everyone "
             "for 3 s", _aimed("isolate", ("+failover-state-wait-lease", "+failover-state-select-slave"),
                               "fenced-best", 3.0)),
    Scenario("power-loss-chosen-replica-in-lease-wait", "the primary cut from the sentinels and clients c2 only "
             "(it keeps replicating until its replicas are fenced); in the leader's lease wait (default mode: "
             "replica selection) the replica it will promote loses power (its unsynced AOF tail is dropped) and "
             "restarts at once, behind the position its FENCE reply promised; 3 s lease, so that the restart "
             "(1-2 s here) ends within the wait",
             _aimed("power-loss", ("+failover-state-wait-lease", "+failover-state-select-slave"), "fenced-best", 0.1,
                    first="hide-from-sentinels", sudden=True), Settings(disk_nemesis=1, lease_ms=3000)),
    Scenario("partition-leader-mid-failover", "the primary isolated; the sentinel elected leader of the "
             "failover is cut from everyone for 6 s as soon as it is elected",
             _aimed("isolate", ("+elected-leader",), "trigger-sentinel", 6.0)),
    Scenario("restart-sentinel-stale-config", "after a first failover, a sentinel SIGKILLed and restarted from "
             "its config of before it (old primary and epoch; or knowing no replica), then the new primary "
             "isolated for a second failover", _stale_sentinel),
    Scenario("clock-step-leader-in-lease-wait", "the primary cut from the sentinels and clients c2 only (its "
             "replicas and clients c1 keep it, so it holds its lease until they are fenced); when the leader "
             "enters the lease wait (fenced) or selects a replica (default), its wall clock steps 0.8-1.9 s "
             "forward (under the 2 s that trigger TILT), as an NTP step would",
             _aimed_clock),
    # The lab's ρ is 5 % (clock_drift_permille 50): within it, the leader's clock fast by ρ and
    # the old primary's slow by ρ are the worst case W is computed for; beyond it, x2 and x0.5.
    Scenario("clock-drift-in-lease-wait", "the primary cut from the sentinels and clients c2 only (it keeps its "
             "replicas, so its lease, until they are fenced), its monotonic clocks at x0.5; the elected leader's "
             "at x2 through the FENCE round and the lease wait: far beyond the 5 % drift fenced mode assumes, so "
             "the leader's wait ends before the old primary's lease (the documented edge)",
             _drift_in_lease_wait(2.0, 0.5)),
    Scenario("clock-drift-in-lease-wait-in-bound", "clock-drift-in-lease-wait with the worst drift within the "
             "5 % bound: the old primary's monotonic clocks at x0.95, the leader's at x1.05",
             _drift_in_lease_wait(1.05, 0.95)),
    Scenario("clock-steps", "partition-primary while every node's and sentinel's wall clock steps forward or "
             "back by 0.2-5 s, one process every second", _clock_steps),
    # -- the disk nemesis: each node's dir on the lab's FUSE filesystem --
    Scenario("power-loss-all-everysec", "every node's host loses power at once (what was not fsynced is lost), "
             "back 2 s later; appendfsync everysec", _one("power-loss", 2.0, "all"),
             Settings(disk_nemesis=1)),
    Scenario("power-loss-all-always", "the same with appendfsync always", _one("power-loss", 2.0, "all"),
             Settings(appendfsync="always", disk_nemesis=1)),
    Scenario("power-loss-primary", "the primary's host loses power (its unsynced writes are lost), back 10 s "
             "later; appendfsync everysec", _one("power-loss", 10.0), Settings(disk_nemesis=1)),
    Scenario("disk-full-primary", "the primary's disk is full (ENOSPC) for 8 s", _one("disk-full", 8.0),
             Settings(disk_nemesis=1)),
    Scenario("disk-eio-primary", "the primary's disk fails every write, fsync and read with EIO for 8 s",
             _one("disk-eio", 8.0), Settings(disk_nemesis=1)),
    Scenario("random", "a composed nemesis drawn from the seed: partitions (random halves, bridges, one-way), "
             "SIGKILL/SIGSTOP/host crash of nodes and sentinels, a crash-looping replica, flapping and slow links, "
             "wall-clock steps and skew, the discriminating split, overlapping", composed),
]}
