"""Invariants checked after every step of a simulation (tests/unit/sentinel/sim.py).

Each rule is restated here from Redis's documentation and sentinel.c, independently of the
policy's code, so a bug in the policy cannot hide behind the same bug in its check:

- one vote per epoch: a sentinel never votes for two different leaders in one epoch (votes
  survive restarts, since they are on disk before they are answered);
- one leader per epoch: no two sentinels win the election of the same failover epoch;
- best replica: the replica a failover selects is a candidate by Redis's exclusions and no
  other candidate sorts before it (priority, then offset, then run id) — in fenced mode, the
  fenced candidate with the highest (epoch, offset), and none better that cannot be promoted;
  a master re-tenured at a new epoch likewise (fenced with a majority, none further than it);
- bounded failovers: a failover in progress ends or aborts within its timeouts (counted in
  time the sentinel was running, out of TILT, and — Redis's one exception — not while the
  promoted replica is SDOWN, which suspends the end of a failover);
- fenced mode: no write acknowledged by WAIT for a majority is missing from a node when it is
  promoted, and no primary accepts a write or acknowledges a WAIT after a node of a newer
  epoch was promoted;
- convergence (checked by `final`): once every fault healed and the system settled, every
  sentinel names the same master with the same config epoch, that node is a master and every
  other node replicates it — in fenced mode with its link up and not fenced above the
  master's epoch, and the master not fenced above its own (liveness: no replica stranded).
"""

from __future__ import annotations

from typing import Any

from node.sentinel.instance import (
    FAILOVER_NONE,
    FAILOVER_RECONF_SLAVES,
    O_DOWN,
    S_DOWN,
    Instance,
)
from node.sentinel.messages import Event
from node.sentinel.policy import lease_wait_ms
from tests.unit.sentinel.sim import NAME, NodeProc, SentinelProc, Sim

PING_PERIOD = 1000
INFO_PERIOD = 10_000


class Violation(AssertionError):
    pass


def _candidate(r: dict[str, Any], master_sdown: bool, master_sdown_for: int, down_after: int, now: int) -> bool:
    """Redis's sentinelSelectSlave exclusions, restated."""
    if r["down"] or r["disconnected"] or r["priority"] == 0:
        return False
    if now - r["last_avail"] > 5 * PING_PERIOD:
        return False
    if now - r["info_refresh"] > (5 * PING_PERIOD if master_sdown else 3 * INFO_PERIOD):
        return False
    limit = 10 * down_after + (master_sdown_for if master_sdown else 0)
    return r["link_down_ms"] <= limit


def _better(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """a sorts strictly before b: lower priority, larger offset, smaller run id (none last)."""
    if a["priority"] != b["priority"]:
        return bool(a["priority"] < b["priority"])
    if a["offset"] != b["offset"]:
        return bool(a["offset"] > b["offset"])
    ra, rb = a["runid"], b["runid"]
    if ra is None or rb is None:
        return ra is not None and rb is None
    return bool(ra.lower() < rb.lower())


class Invariants:
    def __init__(self, sim: Sim) -> None:
        self.sim = sim
        self.leaders: dict[int, set[str]] = {}
        self.votes: dict[tuple[str, int], str] = {}
        self.started: dict[str, float] = {}  # sentinel -> active ms spent in the current failover
        self.last_now = 0
        self.snapshot: dict[str, dict[str, dict[str, Any]]] = {}
        self.selections = 0
        self.promoted_epochs: list[tuple[int, int]] = []  # (time, epoch)
        self.failovers_ended = 0
        sim.checker = self

    def fail(self, text: str) -> None:
        raise Violation(f"seed {self.sim.seed} t={self.sim.now}: {text}")

    # ---------------------------------------------------------------- every step

    def after_step(self) -> None:
        """The failover time bounds, checked every 50 ms of simulated time at most (they have
        seconds of slack); every other rule is checked as its event happens."""
        sim = self.sim
        elapsed = sim.now - self.last_now
        if elapsed < 50:
            return
        self.last_now = sim.now
        for s in sim.sentinels:
            if not s.alive:
                self.started.pop(s.name, None)
                continue
            master = s.policy.masters[NAME]
            if master.failover_state == FAILOVER_NONE:
                if self.started.pop(s.name, None) is not None:
                    self.failovers_ended += 1
                continue
            spent = self.started.get(s.name)
            if spent is None:
                self.started[s.name] = 0.0
                continue
            promoted = master.promoted_slave
            suspended = master.failover_state == FAILOVER_RECONF_SLAVES and promoted is not None and bool(
                promoted.flags & S_DOWN
            )
            if s.paused or s.policy.tilt or suspended:
                continue
            spent += elapsed * s.rate
            self.started[s.name] = spent
            if spent > self.failover_bound(master):
                self.fail(f"{s.name}'s failover of epoch {master.failover_epoch} still in state "
                          f"{master.failover_state} after {spent:.0f} ms")

    def failover_bound(self, master: Instance) -> float:
        ft = master.failover_timeout
        election = min(10_000, ft) + 1000
        fence = ft + lease_wait_ms(master.lease_ms, self.sim.drift_permille) if master.fenced else 0
        # wait-start, fence + lease, send-slaveof-noone, wait-promotion, reconf-slaves; slack for ticks.
        return election + fence + 3 * ft + 2000

    # ---------------------------------------------------------------- events

    def on_event(self, sentinel: SentinelProc, event: Event) -> None:
        kind = event.type
        if kind == "+vote-for-leader":
            runid, epoch_text = event.message.split()
            key = (sentinel.policy.myid, int(epoch_text))
            previous = self.votes.setdefault(key, runid)
            if previous != runid:
                self.fail(f"{sentinel.name} voted for {previous} and {runid} in epoch {epoch_text}")
        elif kind == "+elected-leader":
            master = sentinel.policy.masters[NAME]
            if master.flags & (1 << 11):  # FORCE_FAILOVER: no election
                return
            winners = self.leaders.setdefault(master.failover_epoch, set())
            winners.add(sentinel.name)
            if len(winners) > 1:
                self.fail(f"two leaders in epoch {master.failover_epoch}: {sorted(winners)}")
        elif kind == "+selected-slave":
            self.check_selection(sentinel, event.message.split()[1])
        elif kind == "+fenced-retenure":
            self.check_retenure(sentinel)

    # ---------------------------------------------------------------- selection

    def before_select(self, sentinel: SentinelProc, master: Instance) -> None:
        """What the replicas looked like when the tick that selects began (the tick then
        updates them after the selection)."""
        self.snapshot[sentinel.name] = {
            name: {
                "down": bool(r.flags & (S_DOWN | O_DOWN)),
                "disconnected": r.link.disconnected,
                "last_avail": r.link.last_avail_time,
                "priority": r.slave_priority,
                "info_refresh": r.info_refresh,
                "link_down_ms": r.master_link_down_time,
                "offset": r.slave_repl_offset,
                "runid": r.runid,
                "fence": r.fence_reply,
            }
            for name, r in master.slaves.items()
        }

    def check_selection(self, sentinel: SentinelProc, chosen: str) -> None:
        self.selections += 1
        master = sentinel.policy.masters[NAME]
        replicas = self.snapshot.pop(sentinel.name, None)
        if replicas is None:
            self.fail(f"{sentinel.name} selected {chosen} without a snapshot")
        now = sentinel.policy.now
        if master.fenced:
            self.check_fenced_selection(master, replicas, chosen)
            return
        sdown = bool(master.flags & S_DOWN)
        sdown_for = now - master.s_down_since_time
        candidates = {
            name: r for name, r in replicas.items() if _candidate(r, sdown, sdown_for, master.down_after_period, now)
        }
        if chosen not in candidates:
            self.fail(f"{sentinel.name} promoted {chosen}, not a candidate: {replicas.get(chosen)}")
        for name, r in candidates.items():
            if name != chosen and _better(r, candidates[chosen]):
                self.fail(f"{sentinel.name} promoted {chosen} {candidates[chosen]} over the better {name} {r}")

    def check_fenced_selection(self, master: Instance, replicas: dict[str, dict[str, Any]], chosen: str) -> None:
        epoch = master.failover_epoch
        fenced = {n: r for n, r in replicas.items() if r["fence"] is not None and r["fence"].fence_epoch == epoch}
        if chosen not in fenced:
            self.fail(f"fenced mode promoted {chosen}, which was not fenced at epoch {epoch}")
        # A majority of the replica set as it really is (the nodes', not the sentinel's view
        # of it), counted in distinct nodes, the old master counted but never among them.
        members = self.sim.members()
        fenced_nodes = {r["fence"].node_id for r in fenced.values()}
        if len(fenced_nodes) < len(members) // 2 + 1:
            self.fail(f"fenced mode promoted with only {len(fenced_nodes)} of {len(members)} members fenced")
        best = fenced[chosen]["fence"]
        for name, r in fenced.items():
            if (r["fence"].log_epoch, r["fence"].offset) > (best.log_epoch, best.offset):
                self.fail(f"fenced mode promoted {chosen} {best} although {name} had {r['fence']}")

    def check_retenure(self, sentinel: SentinelProc) -> None:
        """The master keeps its place in a new epoch only as a failover would have chosen it:
        fenced at that epoch with a majority of the real replica set, and no fenced node's
        log further than its own."""
        master = sentinel.policy.masters[NAME]
        epoch = master.failover_epoch
        replies = [ri.fence_reply for ri in (master, *master.slaves.values())
                   if ri.fence_reply is not None and ri.fence_reply.fence_epoch == epoch]
        own = master.fence_reply
        if own is None or own.fence_epoch != epoch:
            self.fail(f"{sentinel.name} re-tenured the master in epoch {epoch} without fencing it")
        if len({r.node_id for r in replies}) < len(self.sim.members()) // 2 + 1:
            self.fail(f"{sentinel.name} re-tenured the master with only {len(replies)} members fenced")
        for r in replies:
            if (r.log_epoch, r.offset) > (own.log_epoch, own.offset):
                self.fail(f"{sentinel.name} re-tenured the master at {own} although a member had {r}")

    # ---------------------------------------------------------------- fenced mode

    def on_promotion(self, node: NodeProc, missing: set[int]) -> None:
        self.promoted_epochs.append((self.sim.now, node.epoch))
        if self.sim.fenced and missing:
            self.fail(f"{node.name} promoted at epoch {node.epoch} without acknowledged writes {sorted(missing)[:5]}")

    def on_ack(self, node: NodeProc, wid: int, epoch: int) -> None:
        self._no_newer_epoch(node, f"acknowledged WAIT for write {wid}", epoch)

    def on_write(self, node: NodeProc, wid: int, epoch: int) -> None:
        self._no_newer_epoch(node, f"accepted write {wid}", epoch)

    def _no_newer_epoch(self, node: NodeProc, what: str, epoch: int) -> None:
        if not self.sim.fenced:
            return
        newer = [e for _, e in self.promoted_epochs if e > epoch]
        if newer:
            self.fail(f"{node.name} {what} in epoch {epoch} after epoch {max(newer)} was promoted")

    # ---------------------------------------------------------------- the end

    def converged(self) -> bool:
        try:
            self.final()
        except Violation:
            return False
        return all(s.view().failover_state == FAILOVER_NONE for s in self.sim.sentinels if s.alive)

    def final(self) -> None:
        """After every fault healed and the system settled."""
        sim = self.sim
        views = {(s.view().current_address().host, s.view().current_address().port, s.view().config_epoch)
                 for s in sim.sentinels if s.alive}
        if len(views) != 1:
            self.fail(f"sentinels disagree: {views}")
        host, port, _ = views.pop()
        master = sim.by_addr[(host, port)]
        assert isinstance(master, NodeProc)
        if not master.alive or master.role != "master":
            self.fail(f"the sentinels' master {master.name} is {master.role}, alive={master.alive}")
        for node in sim.members():
            if node is master or not node.alive:
                continue
            if node.role != "slave" or node.master_addr != (host, port):
                self.fail(f"{node.name} is {node.role} of {node.master_addr}, not a replica of {master.name}")
            if sim.fenced and (not node.link_up or node.fence_epoch > master.epoch):
                # Liveness: a replica fenced above its master's epoch refuses it for good.
                self.fail(f"{node.name} does not replicate {master.name}: link {'up' if node.link_up else 'down'}, "
                          f"fenced at epoch {node.fence_epoch}, the master's epoch is {master.epoch}")
        if sim.fenced and master.stepped_down():
            self.fail(f"the master {master.name} is fenced at epoch {master.fence_epoch} above its epoch "
                      f"{master.epoch}: it acknowledges nothing")
        if sim.fenced or sim.workload:
            missing = {w for w in sim.acked if all(e[1] != w for e in master.log)}
            if sim.fenced and missing:
                self.fail(f"acknowledged writes lost: {sorted(missing)[:10]}")
