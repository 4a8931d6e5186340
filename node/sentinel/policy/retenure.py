"""Fenced mode's re-tenure.

A fenced failover that aborts after fencing a minority of the replicas leaves them promised
to its epoch: they refuse the master, of an older one (STALEEPOCH), for good, and no
failover comes while the master is healthy. A re-tenure is a fenced failover in which the
master is a candidate: elected as for a failover, it fences a majority (the master last,
counted among them), waits the lease out and selects the fenced node with the highest
position, the master on ties. The master chosen is sent SLAVEOF NO ONE EPOCH e POSITION <its
FENCE reply's>: it keeps its log and leads e, which the replicas accept. A replica holding
more (the master is then not the primary with the newest writes) is promoted as in any
failover. Default mode never does this (docs/safety.md)."""

from __future__ import annotations

from node.sentinel import fenced
from node.sentinel.instance import (
    FAILOVER_IN_PROGRESS,
    FAILOVER_NONE,
    FAILOVER_WAIT_RETENURE,
    FORCE_FAILOVER,
    Instance,
)
from node.sentinel.messages import WARNING
from node.sentinel.policy.connections import Connections
from node.sentinel.policy.detection import Detection
from node.sentinel.policy.discovery import Discovery
from node.sentinel.policy.outbox import Outbox
from node.sentinel.policy.state import State
from node.sentinel.policy.transitions import abort_failover, set_state, start_failover


class Retenure:
    """When a stranded fenced master gets a re-tenure, leading it, and its end."""

    def __init__(self, state: State, outbox: Outbox, links: Connections, discovery: Discovery,
                 detection: Detection) -> None:
        self._state = state
        self._outbox = outbox
        self._links = links
        self._discovery = discovery
        self._detection = detection

    def start_if_needed(self, master: Instance) -> bool:
        """A healthy fenced master stranded (node/sentinel/fenced.py, `stranded`) with the
        same epochs for longer than a failover under way elsewhere could take to end gets a
        re-tenure, no sooner than a failover would be retried."""
        state = self._state
        reason = None
        if master.fenced and not master.flags & FAILOVER_IN_PROGRESS and self._detection.master_looks_sane(master):
            reason = fenced.stranded(master)
        if reason is None:
            master.stranded_since = 0
            master.stranded_epochs = None
            return False
        # A failover or re-tenure under way (led by another sentinel) fences at its epoch:
        # the epochs seen change, and the wait starts again. Once they stay as they are for
        # as long as such a one can take to end (fence, lease wait, promotion), it ended.
        epochs = (master.node_epoch, max(ri.fence_epoch or 0 for ri in (master, *master.slaves.values())))
        if epochs != master.stranded_epochs:
            if master.stranded_since == 0:
                self._outbox.log(WARNING, f"Fenced mode: '{master.name}' is stranded: {reason}")
                self._outbox.event(WARNING, "+fenced-stranded", master, f" {reason}")
            master.stranded_since = state.now
            master.stranded_epochs = epochs
            return False
        settle = 2 * master.failover_timeout + fenced.lease_wait_ms(master.lease_ms, state.drift_permille)
        if state.now - master.stranded_since < settle:
            return False
        if state.now - master.failover_start_time < master.failover_timeout * 2:
            return False
        self._outbox.log(WARNING, f"Fenced mode: re-tenure of '{master.name}' at a new epoch: {reason}")
        start_failover(state, self._outbox, master, retenure=True)
        return True

    def lead(self, master: Instance) -> None:
        """The master holds the highest position of the fenced majority: it leads the new
        epoch with its log as it is (no CLIENT KILL: its clients are at the right place)."""
        reply = master.fence_reply
        assert reply is not None
        if not self._links.send_slaveof(master, None, epoch=master.failover_epoch,
                                        position=(reply.log_epoch, reply.offset), kill_clients=False):
            return  # no connection now: selected again at the next run
        self._outbox.event(WARNING, "+fenced-retenure", master, f" epoch {master.failover_epoch} position "
                           f"{reply.log_epoch} {reply.offset}")
        set_state(self._state, master, FAILOVER_WAIT_RETENURE)

    def wait(self, master: Instance) -> None:
        """Refused (the master's log moved since its FENCE reply: it restarted from an older
        AOF) or unanswered: give up at failover-timeout; the next attempt waits twice that."""
        if self._state.now - master.failover_state_change_time > master.failover_timeout:
            self._outbox.event(WARNING, "-failover-abort-retenure-timeout", master, "")
            abort_failover(self._state, master)

    def end(self, master: Instance) -> None:
        """The master's INFO shows it leads the re-tenure's epoch: our configuration gets that
        epoch (it spreads in hellos, ordering it with any failover), the failover is over."""
        master.config_epoch = master.failover_epoch
        master.flags &= ~(FAILOVER_IN_PROGRESS | FORCE_FAILOVER)
        set_state(self._state, master, FAILOVER_NONE)
        fenced.forget_fencing(master)
        master.stranded_since = 0
        master.stranded_epochs = None
        self._outbox.flush()
        self._outbox.event(WARNING, "+fenced-retenure-end", master, f" epoch {master.config_epoch}")
        self._discovery.force_hello_update(master)
