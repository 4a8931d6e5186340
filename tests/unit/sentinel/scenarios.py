"""Seeded simulation runs shared by the simulation tests: one seed picks the cluster's shape,
its settings and a sequence of faults, runs it with the invariants checked after every step,
lets it settle and checks convergence."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from tests.unit.sentinel.invariants import Invariants
from tests.unit.sentinel.sim import Fault, Sim

FAULTS = ("partition", "kill", "pause", "flap", "reset")
SETTLE_MS = 60_000  # TILT lasts 30 s; turning an old master into a replica takes about 20 s


def run_seed(seed: int, *, fenced: bool = False, workload: bool = False, kinds: tuple[str, ...] = FAULTS,
             faults: int | None = None, clock_drift: float = 0.0,
             drift_permille: int = 50, lease_ms: int = 1000, plan: tuple[str, ...] | None = None,
             gap: tuple[int, int] | None = None, **options: Any) -> tuple[Sim, Invariants]:
    rng = random.Random(seed)
    sentinels = rng.choice((3, 3, 5))
    sim = Sim(
        seed,
        n_sentinels=sentinels,
        n_nodes=rng.choice((2, 3, 3, 4)) if not fenced else rng.choice((3, 3, 5)),
        quorum=sentinels // 2 + 1 if rng.random() < 0.8 else rng.randint(1, sentinels),
        down_after=rng.choice((500, 1000, 2000)),
        failover_timeout=rng.choice((2000, 3000, 6000)),
        parallel_syncs=rng.choice((1, 2)),
        fenced=fenced,
        workload=workload,
        clock_drift=clock_drift,
        drift_permille=drift_permille,
        lease_ms=lease_ms,
        **options,
    )
    checker = Invariants(sim)
    count = faults if faults is not None else rng.randint(1, 3)
    end = sim.random_faults(count, 12_000, kinds, max_duration=rng.choice((3000, 15_000, 45_000)), plan=plan,
                            gap=gap)
    return settle(sim, checker, end)


def settle(sim: Sim, checker: Invariants, end: int) -> tuple[Sim, Invariants]:
    """Runs to `end` (the last fault healed), then until everything converged (checked every
    2 s), at most SETTLE_MS; then the final checks (convergence among them)."""
    sim.run_until(end)
    deadline = end + SETTLE_MS
    while sim.now < deadline and not checker.converged():
        sim.run_until(sim.now + 2000)
    checker.final()
    return sim, checker


def split_seed(seed: int) -> tuple[Sim, Invariants]:
    """The chaos lab's split-majority, fenced, long enough for a failover to fence the
    replicas on the sentinels' side (a minority) and abort at failover-timeout: the master and
    ⌊N/2⌋ replicas, with the client, cut off from the sentinels and the other replicas, then
    healed; settled until everything converged (at most SETTLE_MS). Raises Violation."""
    rng = random.Random(seed ^ 0x5B117)
    sentinels = rng.choice((3, 3, 5))
    failover_timeout = rng.choice((2000, 3000))
    down_after = rng.choice((500, 1000))
    sim = Sim(seed, n_sentinels=sentinels, n_nodes=rng.choice((3, 5)), quorum=sentinels // 2 + 1, down_after=down_after,
              failover_timeout=failover_timeout, fenced=True, workload=True, warm=True,
              lease_ms=rng.choice((1000, 3000)))
    checker = Invariants(sim)
    # SDOWN, ODOWN and the election take 1-3 s; fencing gives up after failover-timeout.
    duration = down_after + 3000 + failover_timeout + rng.randrange(0, 4000)
    sim.apply_fault(Fault("split-majority", "master", START_MS, duration))
    return settle(sim, checker, START_MS + duration)


def loss_report(seeds: range, *, fenced: bool, kinds: tuple[str, ...]) -> dict[str, int]:
    """Writes acknowledged by WAIT for a majority, and how many of them the final master
    lacks, over single-fault runs with a client writing."""
    from tests.unit.sentinel.sim import NodeProc

    report = {"seeds": 0, "acknowledged": 0, "lost": 0, "runs_with_loss": 0, "failovers": 0}
    for seed in seeds:
        sim, _ = run_seed(seed, fenced=fenced, workload=True, faults=1, kinds=kinds)
        address = sim.sentinels[0].view().current_address()
        final = sim.by_addr[(address.host, address.port)]
        assert isinstance(final, NodeProc)
        kept = {entry[1] for entry in final.log}
        lost = sum(1 for w in sim.acked if w not in kept)
        report["seeds"] += 1
        report["acknowledged"] += len(sim.acked)
        report["lost"] += lost
        report["runs_with_loss"] += lost > 0
        report["failovers"] += len(sim.promotions)
    return report


# The first fault, once the sentinels (started with the replicas and each other known) have
# connected to everything.
START_MS = 4000
SWEEP_FAULTS = ("partition", "partition-sentinels", "kill", "pause", "flap", "reset", "bounce", "step",
                "stale-sentinels", "join", "leave", "minority-bounce", "split-majority")
# One seed in SPLIT_EVERY of the sweep is split_seed: a failover aborted after fencing a
# minority, then healed, with convergence (liveness) checked after it.
SPLIT_EVERY = 10


def sweep_seed(seed: int) -> Sim:
    """One run of the G1/G2 sweep: fenced mode with a client writing, 1-3 faults of every kind
    (clock steps, a replica restarting over and over, restarts from an older AOF, sentinels
    forgetting replicas, members joining and leaving, partitions, pauses, kills), sometimes
    a step of the leader's wall clock or crashes of nodes mid-rewrite during the lease wait;
    every invariant checked as its event happens (G1 at each promotion, G2 at each accepted
    write and WAIT). No settling, except for the seeds that run `split_seed` (one in
    SPLIT_EVERY), which must converge (convergence is otherwise `run_seed`'s business).
    Raises Violation."""
    if seed % SPLIT_EVERY == SPLIT_EVERY - 1:
        return split_seed(seed)[0]
    rng = random.Random(seed ^ 0x5EED)
    sentinels = rng.choice((3, 3, 5))
    sim = Sim(
        seed,
        n_sentinels=sentinels,
        n_nodes=rng.choice((3, 3, 5)),
        quorum=sentinels // 2 + 1,
        down_after=rng.choice((500, 1000)),
        failover_timeout=rng.choice((2000, 3000)),
        parallel_syncs=rng.choice((1, 2)),
        fenced=True,
        workload=True,
        warm=True,
        clock_drift=rng.choice((0.0, 0.02, 0.045)),
        lease_ms=rng.choice((1000, 1000, 3000)),
        rewrite_ms=rng.choice(((50, 500), (2000, 20_000))),
        restart_on_wait_lease=rng.random() < 0.3,
        step_on_wait_lease=(200, 1700) if rng.random() < 0.3 else None,
        wait_lease_steps=rng.choice((1, 2)),
    )
    Invariants(sim)
    family = rng.random()
    if family < 0.6:
        end = sim.random_faults(rng.randint(1, 3), START_MS, SWEEP_FAULTS, max_duration=rng.choice((2000, 6000, 12_000)),
                                on_master=0.7)
    elif family < 0.8:
        # An old primary demoted by a full resync, then a failover while its AOF still holds
        # its older log: it crashes during the lease wait and restarts from it.
        sim.rewrite_ms = (30_000, 60_000)
        sim.restart_on_wait_lease = True
        end = sim.random_faults(0, START_MS, SWEEP_FAULTS, max_duration=rng.choice((6000, 12_000)),
                                plan=("partition-sentinels", "kill"), gap=(20_000, 30_000))
    else:
        # The leader's wall clock steps during the lease wait, the old primary keeping its
        # clients.
        sim.step_on_wait_lease = (200, 1700)
        end = sim.random_faults(0, START_MS, SWEEP_FAULTS, max_duration=rng.choice((3000, 6000)),
                                plan=(rng.choice(("partition-sentinels", "kill", "pause")), "step"))
    # Until any failover the faults started has ended (at most 8 s after the last fault).
    sim.run_until(end + 2000)
    while sim.now < end + 8000 and not sim.failover_idle():
        sim.run_until(sim.now + 1000)
    return sim


def sweep_chunk(seeds: range) -> dict[str, Any]:
    """Runs `sweep_seed` over `seeds`: what they exercised, and every violation (seed: text)."""
    from tests.unit.sentinel.invariants import Violation

    stats: dict[str, Any] = {"seeds": 0, "promotions": 0, "acknowledged": 0, "wall_steps": 0,
                             "restarts_from_old_aof": 0, "forgotten_replicas": 0, "membership_changes": 0,
                             "refusals": 0, "tilts": 0, "steps": 0, "retenures": 0, "violations": {}}
    for seed in seeds:
        try:
            sim = sweep_seed(seed)
        except Violation as exc:
            stats["violations"][seed] = str(exc)
            continue
        stats["seeds"] += 1
        stats["promotions"] += len(sim.promotions)
        stats["acknowledged"] += len(sim.acked)
        stats["wall_steps"] += len(sim.wall_steps)
        stats["restarts_from_old_aof"] += sim.restarts_from_old_aof
        stats["forgotten_replicas"] += sim.forgotten
        stats["membership_changes"] += sim.membership_changes
        stats["refusals"] += sum(1 for e in sim.events if e[2] == "-failover-abort-fenced-mismatch")
        stats["tilts"] += sum(1 for e in sim.events if e[2] == "+tilt")
        stats["retenures"] += sum(1 for e in sim.events if e[2] == "+fenced-retenure-end")
        stats["steps"] += sim.steps
    return stats


def sweep(seeds: range, jobs: int, progress: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """`sweep_chunk` over `seeds`, split across `jobs` processes; the totals (handed to
    `progress` after each chunk as well)."""
    from concurrent.futures import ProcessPoolExecutor

    size = max(1, min(200, len(seeds) // (jobs * 4)))
    chunks = [seeds[i:i + size] for i in range(0, len(seeds), size)]
    total: dict[str, Any] = {"violations": {}}
    with ProcessPoolExecutor(jobs) as pool:
        for part in (pool.map(sweep_chunk, chunks) if jobs > 1 else map(sweep_chunk, chunks)):
            for key, value in part.items():
                if key == "violations":
                    total[key].update(value)
                else:
                    total[key] = total.get(key, 0) + value
            if progress is not None:
                progress(total)
    return total


def trace_digests(seeds: range, kind: str) -> list[dict[str, Any]]:
    """Per seed, a digest of everything a run produced (every event with its time and
    sentinel, the promotions, the acknowledged writes, the steps, the end time) and its
    verdict: two checkouts that decide alike give equal lines (a refactor of the policy must).
    `kind`: "sweep" (`sweep_seed`) or "default" (`run_seed`)."""
    import hashlib

    from tests.unit.sentinel.invariants import Violation

    rows: list[dict[str, Any]] = []
    for seed in seeds:
        try:
            sim = sweep_seed(seed) if kind == "sweep" else run_seed(seed)[0]
        except Violation as exc:
            rows.append({"seed": seed, "verdict": f"violation: {exc}"})
            continue
        trace = repr((sim.events, sim.promotions, sorted(sim.acked.items()), sim.steps, sim.now))
        rows.append({"seed": seed, "verdict": "ok", "digest": hashlib.sha256(trace.encode()).hexdigest(),
                     "events": len(sim.events), "promotions": len(sim.promotions)})
    return rows


if __name__ == "__main__":
    import argparse
    import json
    import os
    import time

    parser = argparse.ArgumentParser(description="Seeded simulations of sentinels and nodes")
    commands = parser.add_subparsers(dest="command", required=True)
    losses = commands.add_parser("losses", help="WAIT-acknowledged writes lost over single faults, default vs fenced")
    losses.add_argument("--seeds", type=int, default=300)
    losses.add_argument("--faults", default=",".join(FAULTS + ("partition-sentinels",)))
    swept = commands.add_parser("sweep", help="fenced mode's G1/G2 checked after every step over many seeds")
    swept.add_argument("--seeds", type=int, default=100_000)
    swept.add_argument("--first", type=int, default=0)
    swept.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    swept.add_argument("--progress", help="a file rewritten with the totals after each chunk of seeds")
    traces = commands.add_parser("traces", help="a digest of each seed's run, one JSON line per seed, to compare "
                                                "two checkouts")
    traces.add_argument("kind", choices=("sweep", "default"))
    traces.add_argument("--seeds", type=int, default=2000)
    traces.add_argument("--first", type=int, default=0)
    args = parser.parse_args()
    if args.command == "traces":
        for row in trace_digests(range(args.first, args.first + args.seeds), args.kind):
            print(json.dumps(row, sort_keys=True), flush=True)
    elif args.command == "losses":
        for mode in ("default", "fenced"):
            print(mode, loss_report(range(args.seeds), fenced=mode == "fenced", kinds=tuple(args.faults.split(","))))
    else:
        started = time.monotonic()

        def report(totals: dict[str, Any]) -> None:
            if args.progress:
                with open(args.progress, "w") as f:
                    json.dump({**totals, "seconds": round(time.monotonic() - started)}, f, sort_keys=True)

        result = sweep(range(args.first, args.first + args.seeds), args.jobs, report)
        result["seconds"] = round(time.monotonic() - started, 1)
        result["violating_seeds"] = len(result.get("violations", {}))
        print(json.dumps(result, indent=1, sort_keys=True))
        raise SystemExit(1 if result.get("violations") else 0)
