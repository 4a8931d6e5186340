"""Fenced mode's two steps between the election and the selection (docs/safety.md, *Fenced
mode*): fence a majority of the replica set at the failover's epoch (FENCE <epoch>, each
reply giving the node's (epoch, offset, node id)), then wait out the old primary's lease;
and the refusal to go on while this sentinel's view of the replica set disagrees with what
the nodes report (node/sentinel/fenced.py holds the arithmetic)."""

from __future__ import annotations

from node.sentinel import fenced
from node.sentinel.instance import (
    FAILOVER_FENCE,
    FAILOVER_SELECT_SLAVE,
    FAILOVER_WAIT_LEASE,
    MASTER,
    FenceReply,
    Instance,
)
from node.sentinel.messages import NOTICE, WARNING, Value
from node.sentinel.policy.connections import FENCE, Connections
from node.sentinel.policy.outbox import Outbox
from node.sentinel.policy.state import State
from node.sentinel.policy.transitions import abort_failover, set_state


class Fencing:
    """The FENCE and WAIT-LEASE states of a fenced failover (or re-tenure)."""

    def __init__(self, state: State, outbox: Outbox, links: Connections) -> None:
        self._state = state
        self._outbox = outbox
        self._links = links

    def view_disagrees(self, master: Instance) -> bool:
        """Refuse (abort) a fenced failover while this sentinel's view of the replica set
        disagrees with what the nodes report (node/sentinel/fenced.py, `disagreement`)."""
        reason = fenced.disagreement(master)
        if reason is None:
            return False
        self._outbox.log(WARNING, f"Fenced mode: not failing over '{master.name}': {reason}")
        self._outbox.event(WARNING, "-failover-abort-fenced-mismatch", master, f" {reason}")
        abort_failover(self._state, master)
        return True

    def fence(self, master: Instance) -> None:
        """Ask every replica to stop acknowledging primaries older than our epoch and report
        (epoch, offset, node id); move on once a majority of the members did."""
        if self.view_disagrees(master):
            return
        state = self._state
        epoch = master.failover_epoch
        majority = fenced.fence_majority(master)
        targets = list(master.slaves.values())
        if master.retenure and fenced.fenced_members(master) + 1 >= majority:
            # The master is fenced last, once its reply completes a majority: until then it
            # keeps acknowledging (a re-tenure that cannot fence a majority leaves it leading).
            targets.append(master)
        for ri in targets:
            if ri.fence_reply is None and not ri.link.disconnected and ri.link.cc != ri.fence_sent_conn:
                # Once per connection: a reply lost with its connection is asked for again.
                ri.fence_sent_conn = ri.link.cc
                self._links.send(ri, ri.link.cc, FENCE, "FENCE", str(epoch))
        count = fenced.fenced_members(master)
        # A re-tenure goes on only with the master fenced: its FENCE reply is the position
        # it is chosen on, and counting it is what lets the replicas it keeps be a minority.
        if count >= majority and (not master.retenure or master.fence_reply is not None):
            master.fence_majority_time = state.now
            set_state(state, master, FAILOVER_WAIT_LEASE)
            self._outbox.event(WARNING, "+failover-state-wait-lease", master, f" {count}/{fenced.members(master)}")
            self.wait_lease(master)
        elif state.now - master.failover_state_change_time > master.failover_timeout:
            self._outbox.event(WARNING, "-failover-abort-fence-timeout", master, "")
            abort_failover(state, master)

    def on_fence_reply(self, slave: Instance, value: Value) -> None:
        master = slave if slave.flags & MASTER else slave.master
        if master is None or master.failover_state != FAILOVER_FENCE:
            return
        if not (isinstance(value, list) and len(value) == 4 and all(isinstance(v, int) for v in value[:3])
                and isinstance(value[3], bytes)):
            return
        fence_epoch, log_epoch, offset, node_id = value
        assert isinstance(fence_epoch, int) and isinstance(log_epoch, int) and isinstance(offset, int)
        if fence_epoch != master.failover_epoch:
            return  # fenced by a newer failover: it does not count for ours
        slave.fence_reply = FenceReply(fence_epoch, log_epoch, offset, node_id.decode("latin-1"), self._state.now)
        self._outbox.event(NOTICE, "+fenced", slave, f" {fence_epoch} {log_epoch} {offset}")

    def wait_lease(self, master: Instance) -> None:
        if self.view_disagrees(master):
            return
        state = self._state
        if state.now - master.fence_majority_time < fenced.lease_wait_ms(master.lease_ms, state.drift_permille):
            return
        set_state(state, master, FAILOVER_SELECT_SLAVE)
        self._outbox.event(WARNING, "+failover-state-select-slave", master, "")
