"""Seeded simulation runs shared by the simulation tests: one seed picks the cluster's shape,
its settings and a sequence of faults, runs it with the invariants checked after every step,
lets it settle and checks convergence."""

from __future__ import annotations

import random
from typing import Any

from tests.unit.sentinel.invariants import Invariants
from tests.unit.sentinel.sim import Sim

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
    # Settle: until everything converged (checked every 2 s), at most SETTLE_MS.
    sim.run_until(end)
    deadline = end + SETTLE_MS
    while sim.now < deadline and not checker.converged():
        sim.run_until(sim.now + 2000)
    checker.final()
    return sim, checker


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


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description="WAIT-acknowledged writes lost over simulated single faults")
    parser.add_argument("--seeds", type=int, default=300)
    parser.add_argument("--faults", default=",".join(FAULTS + ("partition-sentinels",)))
    args = parser.parse_args()
    for mode in ("default", "fenced"):
        print(mode, loss_report(range(args.seeds), fenced=mode == "fenced", kinds=tuple(args.faults.split(","))))
