"""The nemesis: carries out a plan's steps (`steps.Step`) against a running cluster, each in its
own thread (faults may overlap), recording a `nemesis` start and stop event for each with what
exactly it did, and healing what it did when the step ends or the run aborts.

Victims named by role are resolved when the step starts. Steps with a trigger wait for a
sentinel event seen by the monitor (`Monitor.wait_for`): that is how a fault lands inside a
failover phase — the chosen replica killed during the lease wait, the leader partitioned
mid-failover — whatever the timing of the run.

A fault the cluster cannot apply as the scenario means it (on a user's deployment: links its
proxies cannot separate, a process it has no control over, clocks and disks) is recorded as a
`not-applied` nemesis event with the reason, before anything is changed, and the run goes on
without it.
"""

from __future__ import annotations

import os
import shutil
import threading
import time
from collections.abc import Callable

from chaos.cluster import Cluster, Proc, Process
from chaos.faults import Flapper, Links, NotApplicable
from chaos.history import Event, Recorder
from chaos.monitor import Monitor
from chaos.steps import Step
from chaos.topology import Link


class Bouncer:
    """A process SIGKILLed `period` seconds after it is up (answers PING) and restarted at once,
    over and over (a crash-looping replica that gets back into the cluster each time), in a
    thread, until stopped; it is left running. Killing it `period` after the restart instead
    would, on a loaded machine, kill a process still importing its modules: a process that never
    comes back is a different fault (`kill`)."""

    def __init__(self, proc: Proc, period: float) -> None:
        self.proc, self.period = proc, period
        self.restarts = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="bouncer", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            deadline = time.monotonic() + 15.0
            while not self._stop.is_set() and time.monotonic() < deadline and not self._answers():
                self._stop.wait(0.05)
            if self._stop.wait(self.period):
                return
            self.proc.kill()
            self.proc.start()
            self.restarts += 1

    def _answers(self) -> bool:
        return self.proc.alive() and Cluster.try_call(self.proc, lambda c: c.ping()) is True

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        if not self.proc.alive():
            self.proc.start()


class Nemesis:
    def __init__(self, cluster: Cluster, links: Links, rec: Recorder, steps: list[Step],
                 monitor: Monitor | None = None) -> None:
        self.cluster, self.links, self.rec, self.steps, self.monitor = cluster, links, rec, steps, monitor
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

    def running(self) -> bool:
        """A step is still applying or healing its fault."""
        return any(thread.is_alive() for thread in self._threads)

    # -- who -------------------------------------------------------------------------------

    def _primary(self) -> str:
        primary = self.cluster.sentinel_primary()
        if primary is None:
            masters = [n for n in self.cluster.nodes if (self.cluster.role(n) or [""])[0] == "master"]
            primary = masters[0] if masters else next(iter(self.cluster.nodes))
        return primary

    def _resolve(self, step: Step, trigger: Event | None) -> str:
        if step.target in self.cluster.nodes or step.target in self.cluster.sentinels:
            return step.target
        if step.target == "trigger-sentinel" and trigger is not None:
            return str(trigger["sentinel"])
        primary = self._primary()
        if step.target == "replica":
            replicas = sorted(n for n in self.cluster.nodes if n != primary)
            return replicas[int(float(step.params.get("pick", 0.0)) * len(replicas))]
        if step.target == "fenced-best":
            return self._best_replica(primary, step.at)
        return primary if step.target == "primary" else "all"

    def _best_replica(self, primary: str, since: float) -> str:
        """The replica a fenced failover will promote: the highest (log epoch, offset) among
        the `+fenced` replies the sentinels reported; without them (default mode), the replica
        with the highest replication offset (ROLE, read around the proxies)."""
        best: tuple[tuple[int, int], str] | None = None
        for event in self.monitor.events(frozenset({"+fenced"}), since) if self.monitor else []:
            words = str(event.get("payload", "")).split()
            if "@" not in words[1:] or len(words) < 3:
                continue
            node = words[words.index("@") - 1]
            try:
                position = (int(words[-2]), int(words[-1]))
            except ValueError:
                continue
            if node in self.cluster.nodes and (best is None or position > best[0]):
                best = (position, node)
        if best is not None:
            return best[1]
        offsets = {}
        for name in self.cluster.nodes:
            role = self.cluster.role(name)
            if name != primary and role and role[0] == "slave":
                offsets[name] = int(role[4])
        return max(offsets, key=lambda n: (offsets[n], n)) if offsets else \
            sorted(n for n in self.cluster.nodes if n != primary)[0]

    def _proc(self, name: str) -> Proc:
        return self.cluster.nodes[name] if name in self.cluster.nodes else self.cluster.sentinels[name]

    # -- when ------------------------------------------------------------------------------

    def _run(self, index: int, step: Step) -> None:
        if self._abort.wait(max(0.0, step.at - self.rec.now())):
            return
        victim, name = step.target, f"{step.fault} {step.target}#{index}"
        try:
            trigger: Event | None = None
            if step.trigger:
                if self.monitor is None:
                    raise RuntimeError("a triggered step needs the monitor")
                until = step.until if step.until is not None else float("inf")
                trigger = self.monitor.wait_for(frozenset(step.trigger), step.at, until, self._abort.is_set)
                if trigger is None:
                    if not self._abort.is_set():
                        self.rec.record({"type": "nemesis", "f": "skip", "name": f"{step.fault}#{index}",
                                         "fault": step.fault, "why": f"no {'/'.join(step.trigger)} by {until}s"})
                    return
            victim = self._resolve(step, trigger)
            name = f"{step.fault} {victim}#{index}"
            why = self._why_not(step, victim)
            if why is not None:
                self._not_applied(step, victim, name, why)
                return
            # Recorded before the fault is applied (a partition takes a few hundred ms of API
            # calls): a write acknowledged after this mark may be affected by it.
            start: Event = {"type": "nemesis", "f": "start", "name": name, "fault": step.fault, "node": victim}
            if trigger is not None:
                start["trigger"] = {"f": trigger["f"], "sentinel": trigger.get("sentinel"), "time": trigger["time"]}
            self.rec.record(start)
            heal, detail = self._apply(step, victim, name)
            self._abort.wait(step.length)
            detail = heal() or detail
            self.rec.record({"type": "nemesis", "f": "stop", "name": name, "fault": step.fault, "node": victim,
                             "detail": detail})
        except NotApplicable as exc:  # _why_not finds these before anything is changed
            self._not_applied(step, victim, name, str(exc))
        except Exception as exc:  # recorded, and the runner fails the run: a broken harness
            self.errors.append(f"{step.fault}: {type(exc).__name__}: {exc}")

    def _not_applied(self, step: Step, victim: str, name: str, why: str) -> None:
        self.rec.record({"type": "nemesis", "f": "not-applied", "name": name, "fault": step.fault, "node": victim,
                         "why": why})

    def _why_not(self, step: Step, victim: str) -> str | None:
        """Why this step cannot be applied here (None: it can), found before anything changes:
        a member this cluster does not have, a fault it cannot do, links it cannot cut alone."""
        if victim not in ("all", *self.cluster.nodes, *self.cluster.sentinels):
            return f"no member {victim} here ({len(self.cluster.nodes)} nodes, {len(self.cluster.sentinels)} sentinels)"
        why = self.cluster.unsupported(step.fault, victim)
        if why is None:
            try:
                for cut in self._links_of(step, victim):
                    self.links.check(cut, self._idle(step, victim))
            except NotApplicable as exc:
                why = str(exc)
        return why

    def _idle(self, step: Step, victim: str) -> tuple[str, ...]:
        """The member whose links to other nodes carry nothing during this fault: the primary
        it is aimed at (a primary replicates from nobody). A deployment's proxies need not
        separate those links; the lab's cut them anyway."""
        return (victim,) if step.target == "primary" and victim in self.cluster.nodes else ()

    def _links_of(self, step: Step, victim: str) -> list[list[Link]]:
        """The sets of links the fault cuts or slows (each set in one go)."""
        links = self.links
        members = list(links.net.members)
        others = [m for m in members if m != victim]
        if step.fault == "crash":
            return [links.between([victim], others)]
        if step.fault == "power-loss" and not step.params.get("sudden"):
            victims = list(self.cluster.nodes) if victim == "all" else [victim]
            return [links.between(victims, [m for m in members if m not in victims])]
        if step.fault == "one-way":
            src, dst = list(step.params["src"]), list(step.params["dst"])
            existing = set(links.net.links())
            return [[Link(a, b) for a in src for b in dst if Link(a, b) in existing],
                    [Link(b, a) for a in src for b in dst if Link(b, a) in existing]]
        if step.fault == "slow-links":
            nodes = list(self.cluster.nodes)
            return [links.between(nodes, nodes)]
        if step.fault == "slow-member":
            return [links.between([victim], others)]
        if step.fault in _CUTS:
            return [self._cut(step, victim, list(self.cluster.nodes), list(self.cluster.sentinels))[0]]
        return []

    # -- what ------------------------------------------------------------------------------

    def _apply(self, step: Step, victim: str, name: str) -> tuple[Callable[[], str | None], str]:
        """Starts the fault; returns what ends it (which may return a fuller description) and
        a description of what was done."""
        cluster, links = self.cluster, self.links
        idle = self._idle(step, victim)
        cuts = self._links_of(step, victim)
        if step.fault == "kill":
            proc = self._proc(victim)
            proc.kill()
            return _then(proc.start), f"SIGKILL {victim}, restarted after {step.length}s"
        if step.fault == "crash":
            # A host crash, not a process crash: a SIGKILLed process's sockets still deliver
            # what it had written (the kernel sends it), a crashed machine's do not. Frozen
            # first, so nothing new leaves while its links are cut (what the proxies hold is
            # dropped), then killed.
            proc = self._proc(victim)
            proc.pause()
            crashed = cuts[0]
            links.blackhole(crashed, name, idle)
            proc.kill()

            def reboot() -> None:
                links.heal(name, reset=True)
                proc.start()
            return _then(reboot), f"{victim}'s host crashed ({len(crashed)} links cut, SIGKILL), back after {step.length}s"
        if step.fault == "power-loss":
            # A host losing power: crashed as above (frozen, its links cut, killed), and its disk
            # keeping only what was fsynced. `sudden`: killed at once, links untouched — cutting
            # them takes seconds of proxy calls, longer than a failover phase this may be aimed at.
            victims = list(cluster.nodes) if victim == "all" else [victim]
            sudden = bool(step.params.get("sudden"))
            cut: list[Link] = []
            if not sudden:
                for who in victims:
                    cluster.nodes[who].pause()
                cut = cuts[0]
                links.blackhole(cut, name, idle)
            undone = {}
            for who in victims:
                proc = cluster.nodes[who]
                proc.kill()
                if proc.disk is None:
                    raise RuntimeError("power-loss needs the disk nemesis (setting disk_nemesis 1)")
                undone[who] = proc.disk.power_loss()

            def power_back() -> None:
                if cut:
                    links.heal(name, reset=True)
                for who in victims:
                    cluster.nodes[who].start()
            lost = ", ".join(f"{who} {n} B" for who, n in undone.items())
            return _then(power_back), f"power lost on {', '.join(victims)} (unsynced bytes dropped: {lost}), back after {step.length}s"
        if step.fault in ("disk-full", "disk-eio"):
            disk = cluster.nodes[victim].disk
            if disk is None:
                raise RuntimeError(f"{step.fault} needs the disk nemesis (setting disk_nemesis 1)")
            disk.set_mode("full" if step.fault == "disk-full" else "eio")
            return _then(lambda: disk.set_mode("ok")), f"{victim}'s disk {step.fault[5:]} for {step.length}s"
        if step.fault == "pause":
            proc = self._proc(victim)
            proc.pause()
            return _then(proc.resume), f"SIGSTOP {victim}, SIGCONT after {step.length}s"
        if step.fault == "kill-all":
            for proc in cluster.nodes.values():
                proc.kill()

            def restart_all() -> None:
                for proc in cluster.nodes.values():
                    proc.start()
            return _then(restart_all), f"SIGKILL every node, restarted after {step.length}s"
        if step.fault == "bounce":
            bouncer = Bouncer(self._proc(victim), float(step.params.get("period", 0.5)))
            bouncer.start()

            def stop_bouncing() -> str:
                bouncer.stop()
                return f"{victim} SIGKILLed and restarted every {bouncer.period}s ({bouncer.restarts} restarts)"
            return stop_bouncing, f"{victim} SIGKILLed and restarted every {bouncer.period}s"
        if step.fault == "clock-drift":
            drifting = self._proc(victim).clock
            if drifting is None:
                raise RuntimeError("the clock shim is not built (`make chaos-deps` builds it)")
            rate = float(step.params["rate"])
            drifting.set_drift(rate)

            def real_rate() -> str:
                drifting.set_drift(1.0)
                return (f"{victim}'s monotonic clocks ran at x{rate:g} for {step.length}s "
                        f"(now {drifting.drift_offset_s:+.3f}s off)")
            return real_rate, f"{victim}'s monotonic clocks at x{rate:g}"
        if step.fault in ("clock-step", "clock-skew"):
            clock = self._proc(victim).clock
            if clock is None:
                raise RuntimeError("the clock shim is not built (`make chaos-deps` builds it)")
            if step.fault == "clock-step":
                clock.step(float(step.params["seconds"]))
                return _then(lambda: None), (f"{victim}'s wall clock stepped {float(step.params['seconds']):+g}s "
                                             f"(now {clock.offset_s:+.3f}s off)")
            clock.set_rate(float(step.params["rate"]))

            def steady() -> str:
                clock.set_rate(1.0)
                return f"{victim}'s wall clock ran at x{step.params['rate']} for {step.length}s ({clock.offset_s:+.3f}s off)"
            return steady, f"{victim}'s wall clock at x{step.params['rate']}"
        if step.fault == "stale-sentinel":
            return self._stale_sentinel(step, victim)
        if step.fault == "slow-links":
            return self._slow(step, cuts[0], name, f"on {len(cuts[0])} node links", idle)
        if step.fault == "slow-member":
            return self._slow(step, cuts[0], name, f"on {len(cuts[0])} links of {victim}", idle)
        if step.fault == "one-way":
            # Data from `src` to `dst` stops, the other way still flows: a connection opened
            # by src stalls upstream, one opened by dst downstream.
            src, dst = list(step.params["src"]), list(step.params["dst"])
            out, back = cuts
            links.stall(out, name + "-out", "upstream", idle)
            links.stall(back, name + "-back", "downstream", idle)

            def heal_one_way() -> None:
                links.heal(name + "-out", reset=True)
                links.heal(name + "-back", reset=True)
            return _then(heal_one_way), f"one-way: nothing from {','.join(src)} reaches {','.join(dst)}"
        if step.fault in _CUTS:
            nodes = list(cluster.nodes)
            cut, what = self._cut(step, victim, nodes, list(cluster.sentinels))
            if step.fault == "flap":
                flapper = Flapper(links, cut, float(step.params["period"]), idle)
                flapper.start()
                return _then(flapper.stop), f"{len(cut)} links of {victim} flapping every {step.params['period']}s"
            if step.fault == "stall":
                where = links.stall(cut, name, idle=idle)
            else:
                where = links.blackhole(cut, name, idle)
            crash_loop: Bouncer | None = None
            if step.fault == "partition-bounce":
                crash_loop = Bouncer(cluster.nodes[_buddy(step, victim, nodes)], float(step.params.get("period", 0.5)))
                crash_loop.start()

            def heal() -> str | None:
                if crash_loop is not None:
                    crash_loop.stop()
                links.heal(name, reset=True)
                if crash_loop is not None:
                    return f"{what}; {crash_loop.proc.member.name} restarted {crash_loop.restarts} times"
                return None
            if where and idle:  # a deployment's proxies: the primary's own links were left
                where = f", {victim}'s links to the other nodes left (it replicates from nobody),{where}"
            return heal, f"{what}: {len(cut)} links cut ({_describe(cut)}){where}"
        raise ValueError(f"unknown fault {step.fault!r}")

    def _slow(self, step: Step, where: list[Link], name: str, what: str,
              idle: tuple[str, ...]) -> tuple[Callable[[], str | None], str]:
        links = self.links
        links.latency(where, name + "-lat", int(step.params["latency_ms"]), int(step.params["jitter_ms"]), idle)
        if step.params.get("kb_per_s"):
            links.bandwidth(where, name + "-bw", int(step.params["kb_per_s"]), idle)

        def fast() -> None:
            links.heal(name + "-lat", reset=False)
            if step.params.get("kb_per_s"):
                links.heal(name + "-bw", reset=False)
        rate = f" and {step.params['kb_per_s']} KB/s" if step.params.get("kb_per_s") else ""
        return _then(fast), f"{step.params['latency_ms']}±{step.params['jitter_ms']} ms{rate} {what}"

    def _stale_sentinel(self, step: Step, victim: str) -> tuple[Callable[[], str | None], str]:
        """SIGKILL the sentinel; `length` later restart it from the config it had when the
        cluster was ready (`ready`: it knew every replica and sentinel, the first primary and
        epoch) or as first written (`initial`: it knew only the primary)."""
        proc = self.cluster.sentinels[victim]
        if not isinstance(proc, Process):
            raise NotApplicable("a sentinel restarted from a stale config needs the lab's own sentinel")
        which = str(step.params.get("config", "ready"))
        conf = proc.argv[-1]
        proc.kill()

        def restart_stale() -> None:
            shutil.copyfile(f"{conf}.{which}", conf)
            proc.start()
        return _then(restart_stale), (f"SIGKILL {victim}, restarted after {step.length}s from its {which} config "
                                      f"({os.path.basename(conf)}.{which})")

    def _cut(self, step: Step, victim: str, nodes: list[str], sentinels: list[str]) -> tuple[list[Link], str]:
        """The links a partition-like fault cuts, and what the two sides are."""
        links = self.links
        members = list(links.net.members)
        if step.fault in ("partition", "partition-bounce"):
            # The classic minority-primary case: the primary keeps a replica, a sentinel and
            # some clients on its side; the majority side can elect a new primary.
            side = [victim, _buddy(step, victim, nodes), sentinels[0], "c1"]
        elif step.fault == "split-majority":
            # The primary keeps floor(N/2) replicas (with it, a majority of the data nodes) and
            # clients c1; every sentinel, the other replicas and clients c2 are cut off from them.
            others = sorted(n for n in nodes if n != victim)
            first = int(float(step.params.get("pick", 0.0)) * len(others))
            keep = [others[(first + k) % len(others)] for k in range(len(nodes) // 2)]
            side = [victim, *keep, "c1"]
        elif step.fault == "hide-from-sentinels":
            # The sentinels (and clients c2) lose the primary; its replicas and clients c1 keep it:
            # the sentinels fail over while the old primary still holds its lease.
            return links.between([victim], [*sentinels, "c2"]), f"{victim} cut from the sentinels and c2"
        elif step.fault == "halves":
            side = [m for m in step.params["side"] if m in members]
        elif step.fault == "bridge":
            a, b = list(step.params["a"]), list(step.params["b"])
            return links.between(a, b), f"bridge: {','.join(a)} | {step.params['bridge']} | {','.join(b)}"
        else:
            peers = [n for n in nodes if n != victim] + sentinels
            if step.fault == "isolate":
                others = [m for m in members if m != victim and m != "c1"] if victim in nodes else \
                    [m for m in members if m != victim]
                return links.between([victim], others), f"{victim} isolated"
            # stall and flap: the links from the other nodes and the sentinels to the victim
            return [Link(p, victim) for p in peers], f"{victim}'s links from its peers"
        rest = [m for m in members if m not in side]
        return links.between(side, rest), f"{','.join(side)} | {','.join(rest)}"


# The faults that cut links between two sides (`Nemesis._cut` says which).
_CUTS = frozenset({"partition", "isolate", "stall", "flap", "split-majority", "partition-bounce", "halves", "bridge",
                   "hide-from-sentinels"})


def _buddy(step: Step, victim: str, nodes: list[str]) -> str:
    """The replica a minority primary keeps on its side (drawn by the step's `pick`)."""
    others = sorted(n for n in nodes if n != victim)
    return others[int(float(step.params.get("pick", 0.0)) * len(others))]


def _then(action: Callable[[], None]) -> Callable[[], str | None]:
    def run() -> None:
        action()
    return run


def _describe(links: list[Link]) -> str:
    shown = ", ".join(f"{link.src}>{link.dst}" for link in links[:6])
    return shown + (f", ... ({len(links) - 6} more)" if len(links) > 6 else "")

