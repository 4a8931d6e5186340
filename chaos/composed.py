"""The composed nemesis: a random schedule of mixed faults drawn from a seed, as Jepsen's
combined nemeses do. The same seed gives the same schedule (which faults, on whom, when, how
long), so a failing seed of a soak reruns exactly with `rill chaos run --scenario random --seed K`
(the timing of the cluster's own reactions still varies from run to run).

From 4 s into the workload until 4 s before its end, faults follow each other with gaps of
1-3 s; one in three overlaps the previous one. Each lasts 2-9 s. Victims named by role
(`primary`, `replica`) are resolved when the fault starts; random sides are drawn here, from the
members' fixed names.
"""

from __future__ import annotations

import random

from chaos.steps import Step, client_names, node_names, sentinel_names

# fault kind -> weight: the partitions and process faults Jepsen's analyses found most telling
WEIGHTS = {
    "partition-primary": 3, "halves": 3, "bridge": 2, "one-way": 2, "split-majority": 2,
    "kill-node": 2, "pause-node": 2, "crash-node": 2, "kill-sentinel": 1, "pause-sentinel": 1,
    "bounce-replica": 2, "partition-bounce": 2, "flap": 1, "slow-member": 1, "clock-step": 2, "clock-skew": 1,
    "clock-drift": 1,
}


def composed(rng: random.Random, duration: float) -> list[Step]:
    steps: list[Step] = []
    t = round(rng.uniform(4.0, 6.0), 2)
    end = duration - 4.0
    kinds = sorted(WEIGHTS)
    while t < end - 2.0:
        kind = rng.choices(kinds, weights=[WEIGHTS[k] for k in kinds])[0]
        length = round(min(rng.uniform(2.0, 9.0), end - t), 2)
        steps.append(_step(rng, kind, t, length))
        if rng.random() < 1 / 3:
            t = round(t + rng.uniform(0.5, max(0.6, length)), 2)  # overlaps this one
        else:
            t = round(t + length + rng.uniform(1.0, 3.0), 2)
    return steps


def _step(rng: random.Random, kind: str, at: float, length: float) -> Step:
    nodes, sentinels, clients = node_names(), sentinel_names(), client_names()
    everyone = nodes + sentinels + clients
    pick = round(rng.random(), 4)
    if kind == "partition-primary":
        return Step(at, length, "partition", "primary", {"pick": pick})
    if kind == "split-majority":
        return Step(at, length, "split-majority", "primary", {"pick": pick})
    if kind == "halves":
        side = sorted(rng.sample(everyone, rng.randint(2, len(everyone) // 2)))
        return Step(at, length, "halves", "primary", {"side": side})
    if kind == "bridge":
        shuffled = rng.sample(nodes + sentinels, len(nodes) + len(sentinels))
        bridge = shuffled[0]
        a = sorted(shuffled[1:1 + len(shuffled) // 2] + [clients[0]])
        b = sorted(shuffled[1 + len(shuffled) // 2:] + [clients[1]])
        return Step(at, length, "bridge", bridge, {"a": a, "b": b, "bridge": bridge})
    if kind == "one-way":
        src = sorted(rng.sample(nodes + sentinels, rng.randint(1, 3)))
        dst = sorted(m for m in nodes + sentinels if m not in src)
        return Step(at, length, "one-way", src[0], {"src": src, "dst": dst})
    if kind in ("kill-node", "pause-node", "crash-node"):
        fault = kind.split("-")[0]
        target = "primary" if rng.random() < 0.6 else "replica"
        return Step(at, length, fault, target, {"pick": pick})
    if kind in ("kill-sentinel", "pause-sentinel"):
        return Step(at, length, kind.split("-")[0], rng.choice(sentinels))
    if kind == "bounce-replica":
        return Step(at, length, "bounce", "replica", {"pick": pick, "period": round(rng.uniform(0.3, 1.0), 2)})
    if kind == "partition-bounce":
        return Step(at, length, "partition-bounce", "primary", {"pick": pick, "period": round(rng.uniform(0.3, 1.0), 2)})
    if kind == "flap":
        return Step(at, length, "flap", "primary", {"period": round(rng.uniform(0.3, 1.0), 2)})
    if kind == "slow-member":
        return Step(at, length, "slow-member", rng.choice(nodes + sentinels),
                    {"latency_ms": rng.choice([50, 150, 400]), "jitter_ms": rng.choice([0, 50, 200])})
    if kind == "clock-step":
        seconds = round(rng.choice([1, -1]) * rng.uniform(0.2, 5.0), 2)
        return Step(at, 0.1, "clock-step", rng.choice(nodes + sentinels), {"seconds": seconds})
    if kind == "clock-skew":
        return Step(at, length, "clock-skew", rng.choice(nodes + sentinels), {"rate": round(rng.uniform(0.8, 1.25), 3)})
    if kind == "clock-drift":
        # within fenced mode's assumed bound (ρ = 5 %, the lab's setting): a soak's fenced runs
        # judge the guarantee under its assumptions; beyond it, the clock-drift-in-lease-wait scenario
        return Step(at, length, "clock-drift", rng.choice(nodes + sentinels), {"rate": round(rng.uniform(0.95, 1.05), 3)})
    raise ValueError(kind)
