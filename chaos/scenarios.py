"""The scenarios (which faults, when, for how long) and the nemesis that carries them out.

A scenario's plan is drawn from a seeded random generator: the same seed gives the same
schedule, lengths and choices (which replica, how fast a link flaps). Targets are named by
role ("primary", "replica") and resolved when the fault starts, from what the sentinels say,
so a plan means the same thing on every target. Plans assume a workload of at least 20 s and
end every fault by `duration - 4` s, so the cluster has time to heal before the producers stop.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from chaos.cluster import Cluster
from chaos.faults import Flapper, Links
from chaos.history import Recorder
from chaos.targets import Settings
from chaos.topology import Link


@dataclass(frozen=True)
class Step:
    """One fault: starts `at` seconds into the workload and lasts `length` seconds."""

    at: float
    length: float
    fault: str  # kill, crash, pause, kill-all, partition, isolate, stall, flap, slow-links
    target: str = "primary"  # primary, replica, all
    params: dict[str, Any] = field(default_factory=dict)


Plan = Callable[[random.Random, float], list[Step]]


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    plan: Plan
    settings: Settings = Settings()
    nodes: int = 5


def _start(rng: random.Random) -> float:
    return round(rng.uniform(4.0, 6.0), 2)


def _length(rng: random.Random, duration: float, start: float, wanted: float) -> float:
    return round(min(wanted * rng.uniform(0.9, 1.1), duration - 4.0 - start), 2)


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
]}


class Nemesis:
    """Runs a plan's steps (each in its own thread, so faults may overlap), recording a
    `nemesis` start and stop event for each, with what exactly it did."""

    def __init__(self, cluster: Cluster, links: Links, rec: Recorder, steps: list[Step]) -> None:
        self.cluster, self.links, self.rec, self.steps = cluster, links, rec, steps
        self._abort = threading.Event()
        self._threads = [threading.Thread(target=self._run, args=(i, step), name=f"nemesis-{i}", daemon=True)
                         for i, step in enumerate(steps)]
        self.errors: list[str] = []

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def join(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))

    def abort(self) -> None:
        """Ends every fault now (the steps heal what they did)."""
        self._abort.set()

    def _primary(self) -> str:
        primary = self.cluster.sentinel_primary()
        if primary is None:
            masters = [n for n in self.cluster.nodes if (self.cluster.role(n) or [""])[0] == "master"]
            primary = masters[0] if masters else next(iter(self.cluster.nodes))
        return primary

    def _resolve(self, step: Step) -> str:
        primary = self._primary()
        if step.target == "replica":
            replicas = sorted(n for n in self.cluster.nodes if n != primary)
            return replicas[int(float(step.params.get("pick", 0.0)) * len(replicas))]
        return primary if step.target == "primary" else "all"

    def _run(self, index: int, step: Step) -> None:
        if self._abort.wait(max(0.0, step.at - self.rec.now())):
            return
        try:
            victim = self._resolve(step)
            name = f"{step.fault} {victim}#{index}"
            # Recorded before the fault is applied (a partition takes a few hundred ms of API
            # calls): a write acknowledged after this mark may be affected by it.
            self.rec.record({"type": "nemesis", "f": "start", "name": name, "fault": step.fault, "node": victim})
            heal, detail = self._apply(step, victim, name)
            self._abort.wait(step.length)
            heal()
            self.rec.record({"type": "nemesis", "f": "stop", "name": name, "fault": step.fault, "node": victim,
                             "detail": detail})
        except Exception as exc:  # recorded, and the runner fails the run: a broken harness
            self.errors.append(f"{step.fault}: {type(exc).__name__}: {exc}")

    def _apply(self, step: Step, victim: str, name: str) -> tuple[Callable[[], None], str]:
        """Starts the fault; returns what ends it and a description of what was done."""
        cluster, links = self.cluster, self.links
        nodes = list(cluster.nodes)
        sentinels = list(cluster.sentinels)
        if step.fault == "kill":
            cluster.nodes[victim].kill()
            return cluster.nodes[victim].start, f"SIGKILL {victim}, restarted after {step.length}s"
        if step.fault == "crash":
            # A host crash, not a process crash: a SIGKILLed process's sockets still deliver
            # what it had written (the kernel sends it), a crashed machine's do not. Frozen
            # first, so nothing new leaves while its links are cut (what the proxies hold is
            # dropped), then killed.
            cluster.nodes[victim].pause()
            crashed = links.between([victim], [m for m in links.lab.members if m != victim])
            links.blackhole(crashed, name)
            cluster.nodes[victim].kill()

            def reboot() -> None:
                links.heal(crashed, name, reset=True)
                cluster.nodes[victim].start()
            return reboot, f"{victim}'s host crashed ({len(crashed)} links cut, SIGKILL), back after {step.length}s"
        if step.fault == "pause":
            cluster.nodes[victim].pause()
            return cluster.nodes[victim].resume, f"SIGSTOP {victim}, SIGCONT after {step.length}s"
        if step.fault == "kill-all":
            for proc in cluster.nodes.values():
                proc.kill()

            def restart_all() -> None:
                for proc in cluster.nodes.values():
                    proc.start()
            return restart_all, f"SIGKILL every node, restarted after {step.length}s"
        if step.fault in ("partition", "isolate", "stall", "flap"):
            cut = self._cut(step, victim, nodes, sentinels)
            if step.fault == "flap":
                flapper = Flapper(links, cut, float(step.params["period"]))
                flapper.start()
                return flapper.stop, f"{len(cut)} links of {victim} flapping every {step.params['period']}s"
            if step.fault == "stall":
                links.stall(cut, name)
            else:
                links.blackhole(cut, name)

            def heal() -> None:
                links.heal(cut, name, reset=True)
            return heal, f"{step.fault}: {len(cut)} links cut ({_describe(cut)})"
        if step.fault == "slow-links":
            between = links.between(nodes, nodes)
            links.latency(between, name + "-lat", int(step.params["latency_ms"]), int(step.params["jitter_ms"]))
            links.bandwidth(between, name + "-bw", int(step.params["kb_per_s"]))

            def fast() -> None:
                links.heal(between, name + "-lat", reset=False)
                links.heal(between, name + "-bw", reset=False)
            return fast, (f"{step.params['latency_ms']}±{step.params['jitter_ms']} ms and "
                          f"{step.params['kb_per_s']} KB/s on {len(between)} node links")
        raise ValueError(f"unknown fault {step.fault!r}")

    def _cut(self, step: Step, victim: str, nodes: list[str], sentinels: list[str]) -> list[Link]:
        """The links a partition-like fault cuts."""
        links = self.links
        if step.fault == "partition":
            # The classic minority-primary case: the primary keeps a replica, a sentinel and
            # some clients on its side; the majority side can elect a new primary.
            others = sorted(n for n in nodes if n != victim)
            buddy = others[int(float(step.params.get("pick", 0.0)) * len(others))]
            minority = [victim, buddy, sentinels[0], "c1"]
            majority = [m for m in self.links.lab.members if m not in minority]
            return links.between(minority, majority)
        peers = [n for n in nodes if n != victim] + sentinels
        if step.fault == "isolate":
            return links.between([victim], [*peers, "c2"])
        # stall and flap: the links from the other nodes and the sentinels to the victim
        return [Link(p, victim) for p in peers]


def _describe(links: list[Link]) -> str:
    shown = ", ".join(f"{link.src}>{link.dst}" for link in links[:6])
    return shown + (f", ... ({len(links) - 6} more)" if len(links) > 6 else "")
