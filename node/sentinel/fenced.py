"""The sentinel side of fenced mode, as pure functions over what a sentinel knows of a master
and its replicas (docs/safety.md, *Fenced mode*): whether that knowledge agrees with what the
nodes say of their replica set, how many fenced members make a majority, how long to wait
out the old primary's lease, which fenced node to promote, and whether a healthy master
needs a re-tenure (replicas a failover fenced before it aborted refuse it).

Members are counted by node id (`fenced_node_id` in INFO and in FENCE replies: a durable
identity, node/replication/node_id.py), not by address: one node a sentinel learned under two
addresses is one member, and its two FENCE replies one fenced member. A replica whose node id
is not known yet (no INFO since it was learned) counts as a member of its own.

The majority arithmetic holds only if the sentinel's replica set is the nodes' — the same size
N (`fenced-replica-set-size` on every node) and the same lease (`fenced-lease-milliseconds`).
A sentinel that knows fewer replicas (after SENTINEL RESET, or restarted from a stale
configuration file), or a node with another lease, would make a "majority" that does not
intersect the old primary's, or wait out a shorter lease than the old primary holds:
`disagreement` says why, and the policy refuses to fail over while it does.
"""

from __future__ import annotations

import math

from node.sentinel.instance import O_DOWN, S_DOWN, Instance


def lease_wait_ms(lease_ms: int, drift_permille: int) -> int:
    """How long a sentinel waits, on its own clock, after a majority of replicas stopped
    acknowledging the old primary before promoting: the lease the old primary may still hold
    on its clock, converted into the slowest possible sentinel clock (rates within
    ±drift): lease x (1 + drift) / (1 - drift), rounded up."""
    return math.ceil(lease_ms * (1000 + drift_permille) / (1000 - drift_permille))


def _member(ri: Instance) -> str:
    return ri.node_id if ri.node_id is not None else f"address {ri.addr.key()}"


def members(master: Instance) -> int:
    """The replica set as this sentinel knows it: the master and its replicas, by node id."""
    return len({_member(ri) for ri in (master, *master.slaves.values())})


def fence_majority(master: Instance) -> int:
    """Fenced members needed: a majority of the replica set, which counts the old master. In
    a failover the master is never one of them (it cannot be promoted, so a write only it
    shares with the majority would be lost); in a re-tenure it must be one (it is the
    candidate the re-tenure is for)."""
    return members(master) // 2 + 1


def fenced_nodes(master: Instance) -> list[Instance]:
    """The members that answered FENCE at this failover's epoch: replicas and, in a
    re-tenure, the master itself."""
    epoch = master.failover_epoch
    nodes = [master, *master.slaves.values()] if master.retenure else list(master.slaves.values())
    return [ri for ri in nodes if ri.fence_reply is not None and ri.fence_reply.fence_epoch == epoch]


def fenced_members(master: Instance) -> int:
    """Distinct members among the fenced nodes (by the node id of their FENCE reply)."""
    return len({ri.fence_reply.node_id for ri in fenced_nodes(master) if ri.fence_reply is not None})


def stranded(master: Instance) -> str | None:
    """Why a fenced master that looks healthy needs a re-tenure (None: it does not): it leads
    no epoch (fenced above its own, or a node that started as a primary without having been
    promoted in its log's epoch), or replicas that are up are fenced above its epoch — a
    failover fenced them and then aborted — and refuse it (`STALEEPOCH`) until it leads a
    newer epoch. Read from the nodes' INFO (`fence_epoch`, `epoch`, `leads_epoch`)."""
    epoch = master.node_epoch
    if epoch is None:
        return None
    if master.leads_epoch is False:
        return f"the master leads no epoch (fenced at {master.fence_epoch}, its log in epoch {epoch})"
    above = [s for s in master.slaves.values()
             if s.fence_epoch is not None and s.fence_epoch > epoch and not s.flags & (S_DOWN | O_DOWN)]
    if not above:
        return None
    return f"replicas fenced above the master's epoch {epoch}: " + " ".join(
        f"{s.addr.key()}@{s.fence_epoch}" for s in above)


def disagreement(master: Instance) -> str | None:
    """Why this sentinel's view of the replica set may not be used for a fenced failover now,
    or None when every node that reported INFO (at its current address) agrees with it."""
    reported = [(ri, ri.fenced_settings) for ri in (master, *master.slaves.values()) if ri.fenced_settings is not None]
    if not reported:
        return "no node of the replica set has reported its fenced-mode settings (INFO) yet"
    for ri, settings in reported:
        if settings.size == 0:
            return f"{ri.addr.key()} reports no fenced mode in INFO"
        if settings.lease_ms != master.lease_ms:
            return (f"{ri.addr.key()} has fenced-lease-milliseconds {settings.lease_ms}, this sentinel waits out "
                    f"{master.lease_ms}")
    known = members(master)
    for _, settings in reported:
        if settings.size != known:
            return (f"the nodes say fenced-replica-set-size {settings.size}, this sentinel knows {known} members "
                    f"(the master and {known - 1} replicas; SENTINEL RESET and the master's INFO can teach it the others)")
    return None


def select_fenced(master: Instance) -> Instance | None:
    """The fenced node with the highest (log epoch, offset) — ties: the master (in a
    re-tenure: nothing moves), lower priority, smaller run id — provided no fenced node that
    cannot be promoted (down, disconnected, a replica of priority 0) holds more: that one may
    be the only copy of an acknowledged write."""
    fenced = fenced_nodes(master)
    candidates = [
        s for s in fenced if not s.flags & (S_DOWN | O_DOWN) and not s.link.disconnected
        and (s is master or s.slave_priority != 0)
    ]
    if not candidates:
        return None

    def position(s: Instance) -> tuple[int, int]:
        assert s.fence_reply is not None
        return (s.fence_reply.log_epoch, s.fence_reply.offset)

    best = max(position(s) for s in candidates)
    if any(position(s) > best for s in fenced):
        return None
    tied = [s for s in candidates if position(s) == best]
    return min(tied, key=lambda s: (s is not master, s.slave_priority, s.runid is None, (s.runid or "").lower()))


def forget_fencing(master: Instance) -> None:
    """A failover or re-tenure is over: its FENCE replies count no more."""
    master.fence_majority_time = 0
    master.retenure = False
    for ri in (master, *master.slaves.values()):
        ri.fence_reply = None
        ri.fence_sent_conn = None
