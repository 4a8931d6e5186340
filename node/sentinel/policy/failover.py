"""The failover state machine of a master (sentinel.c's sentinelFailoverStateMachine): after
ODOWN, a new epoch and the election (voting.py), select a replica, promote it with a MULTI
block, wait for INFO to show it master, re-point the other replicas `parallel-syncs` at a
time, and switch our configuration to the new master; each step is bounded by
failover-timeout and the next attempt waits twice that long. Fenced mode inserts its steps
between the election and the selection (fencing.py) and may re-tenure the master instead
(retenure.py).

Also here, what the failover does about an INFO reply (`on_info`): a promotion that worked,
a replica turned master behind our back (a returning old master) turned back into a replica,
replicas following the wrong master re-pointed, and the progress of the re-pointing."""

from __future__ import annotations

from datetime import UTC, datetime

from node.sentinel import fenced, selection
from node.sentinel.info_reply import InfoReport
from node.sentinel.instance import (
    FAILOVER_FENCE,
    FAILOVER_IN_PROGRESS,
    FAILOVER_RECONF_SLAVES,
    FAILOVER_SELECT_SLAVE,
    FAILOVER_SEND_SLAVEOF_NOONE,
    FAILOVER_UPDATE_CONFIG,
    FAILOVER_WAIT_LEASE,
    FAILOVER_WAIT_PROMOTION,
    FAILOVER_WAIT_RETENURE,
    FAILOVER_WAIT_START,
    FORCE_FAILOVER,
    MASTER,
    O_DOWN,
    PROMOTED,
    RECONF_DONE,
    RECONF_INPROG,
    RECONF_SENT,
    S_DOWN,
    SLAVE,
    Instance,
)
from node.sentinel.messages import NOTICE, WARNING
from node.sentinel.policy.connections import Connections
from node.sentinel.policy.detection import Detection
from node.sentinel.policy.discovery import Discovery
from node.sentinel.policy.fencing import Fencing
from node.sentinel.policy.outbox import Outbox
from node.sentinel.policy.registry import Registry
from node.sentinel.policy.retenure import Retenure
from node.sentinel.policy.state import State
from node.sentinel.policy.transitions import abort_failover, set_state, start_failover
from node.sentinel.policy.voting import Voting
from node.sentinel.timings import SIMFAILURE_CRASH_AFTER_ELECTION, SIMFAILURE_CRASH_AFTER_PROMOTION


class Failover:
    """Starting a failover and running its states."""

    def __init__(self, state: State, outbox: Outbox, links: Connections, registry: Registry, discovery: Discovery,
                 detection: Detection, voting: Voting, fencing: Fencing, retenure: Retenure) -> None:
        self._state = state
        self._outbox = outbox
        self._links = links
        self._registry = registry
        self._discovery = discovery
        self._detection = detection
        self._voting = voting
        self._fencing = fencing
        self._retenure = retenure

    def start_if_needed(self, master: Instance) -> bool:
        state = self._state
        if not master.flags & O_DOWN or master.flags & FAILOVER_IN_PROGRESS:
            return False
        if state.now - master.failover_start_time < master.failover_timeout * 2:
            if master.failover_delay_logged != master.failover_start_time:
                master.failover_delay_logged = master.failover_start_time
                when = (master.failover_start_time + master.failover_timeout * 2 + state.wall_offset) // 1000
                stamp = datetime.fromtimestamp(when, tz=UTC).strftime("%a %b %d %H:%M:%S %Y")
                self._outbox.log(NOTICE, f"Next failover delay: I will not start a failover before {stamp}")
            return False
        start_failover(state, self._outbox, master)
        return True

    def run(self, master: Instance) -> None:
        """One step of the state machine, at each timer run."""
        if not master.flags & FAILOVER_IN_PROGRESS:
            return
        failover_state = master.failover_state
        if failover_state == FAILOVER_WAIT_START:
            self._wait_start(master)
        elif failover_state == FAILOVER_FENCE:
            self._fencing.fence(master)
        elif failover_state == FAILOVER_WAIT_LEASE:
            self._fencing.wait_lease(master)
        elif failover_state == FAILOVER_SELECT_SLAVE:
            self._select_slave(master)
        elif failover_state == FAILOVER_SEND_SLAVEOF_NOONE:
            self._send_slaveof_noone(master)
        elif failover_state == FAILOVER_WAIT_PROMOTION:
            self._wait_promotion(master)
        elif failover_state == FAILOVER_WAIT_RETENURE:
            self._retenure.wait(master)
        elif failover_state == FAILOVER_RECONF_SLAVES:
            self._reconf_next_slave(master)

    def select(self, master: Instance) -> Instance | None:
        """The replica to promote (in fenced mode's selection, possibly the master itself)."""
        if master.fenced and master.failover_state == FAILOVER_SELECT_SLAVE:
            return fenced.select_fenced(master)
        return selection.select_replica(master, self._state.now, self._state.timings)

    def _wait_start(self, master: Instance) -> None:
        state = self._state
        outbox = self._outbox
        leader = self._voting.leader(master, master.failover_epoch)
        is_leader = leader is not None and leader.lower() == state.myid.lower()
        if not is_leader and not master.flags & FORCE_FAILOVER:
            election_timeout = min(state.timings.election_timeout, master.failover_timeout)
            if state.now - master.failover_start_time > election_timeout:
                outbox.event(WARNING, "-failover-abort-not-elected", master, "")
                abort_failover(state, master)
            return
        outbox.event(WARNING, "+elected-leader", master, "")
        if state.simfailure_flags & SIMFAILURE_CRASH_AFTER_ELECTION:
            outbox.crash()
            return
        if master.fenced:
            if self._fencing.view_disagrees(master):
                return
            set_state(state, master, FAILOVER_FENCE)
            outbox.event(WARNING, "+failover-state-fence", master, "")
            self._fencing.fence(master)
            return
        set_state(state, master, FAILOVER_SELECT_SLAVE)
        outbox.event(WARNING, "+failover-state-select-slave", master, "")

    def _select_slave(self, master: Instance) -> None:
        slave = self.select(master)
        if slave is master:
            self._retenure.lead(master)
            return
        if slave is None:
            self._outbox.event(WARNING, "-failover-abort-no-good-slave", master, "")
            abort_failover(self._state, master)
            return
        self._outbox.event(WARNING, "+selected-slave", slave, "")
        slave.flags |= PROMOTED
        master.promoted_slave = slave
        set_state(self._state, master, FAILOVER_SEND_SLAVEOF_NOONE)
        self._outbox.event(NOTICE, "+failover-state-send-slaveof-noone", slave, "")

    def _send_slaveof_noone(self, master: Instance) -> None:
        promoted = master.promoted_slave
        assert promoted is not None
        if promoted.link.disconnected:
            if self._state.now - master.failover_state_change_time > master.failover_timeout:
                self._outbox.event(WARNING, "-failover-abort-slave-timeout", master, "")
                abort_failover(self._state, master)
            return
        # The reply is not checked: INFO will show whether the replica became a master (a
        # fenced node refuses if its log is no longer at the position its FENCE reply showed).
        reply = promoted.fence_reply if master.fenced else None
        position = None if reply is None else (reply.log_epoch, reply.offset)
        if not self._links.send_slaveof(promoted, None, epoch=master.failover_epoch if master.fenced else None,
                                        position=position):
            return
        self._outbox.event(NOTICE, "+failover-state-wait-promotion", promoted, "")
        set_state(self._state, master, FAILOVER_WAIT_PROMOTION)

    def _wait_promotion(self, master: Instance) -> None:
        if self._state.now - master.failover_state_change_time > master.failover_timeout:
            self._outbox.event(WARNING, "-failover-abort-slave-timeout", master, "")
            abort_failover(self._state, master)

    def _detect_end(self, master: Instance) -> None:
        promoted = master.promoted_slave
        # Not finished while the promoted replica is unreachable: not even failover-timeout
        # ends it then (a newer configuration from another sentinel may).
        if promoted is None or promoted.flags & S_DOWN:
            return
        not_reconfigured = sum(
            1 for s in master.slaves.values() if not s.flags & (PROMOTED | RECONF_DONE) and not s.flags & S_DOWN
        )
        timeout = False
        if self._state.now - master.failover_state_change_time > master.failover_timeout:
            not_reconfigured = 0
            timeout = True
            self._outbox.event(WARNING, "+failover-end-for-timeout", master, "")
        if not_reconfigured == 0:
            self._outbox.event(WARNING, "+failover-end", master, "")
            set_state(self._state, master, FAILOVER_UPDATE_CONFIG)
        if timeout:
            # Best effort: point the replicas we did not get to at the new master.
            for slave in master.slaves.values():
                if slave.flags & (PROMOTED | RECONF_DONE | RECONF_SENT) or slave.link.disconnected:
                    continue
                if self._links.send_slaveof(slave, promoted.addr):
                    self._outbox.event(NOTICE, "+slave-reconf-sent-be", slave, "")
                    slave.flags |= RECONF_SENT

    def _reconf_next_slave(self, master: Instance) -> None:
        promoted = master.promoted_slave
        assert promoted is not None
        now = self._state.now
        in_progress = sum(1 for s in master.slaves.values() if s.flags & (RECONF_SENT | RECONF_INPROG))
        for slave in list(master.slaves.values()):
            if in_progress >= master.parallel_syncs:
                break
            if slave.flags & (PROMOTED | RECONF_DONE):
                continue
            # A replica that does not move on is taken as done: the sentinels fix its
            # configuration later (+fix-slave-config).
            if slave.flags & RECONF_SENT and now - slave.slave_reconf_sent_time > self._state.timings.slave_reconf_timeout:
                self._outbox.event(NOTICE, "-slave-reconf-sent-timeout", slave, "")
                slave.flags = (slave.flags & ~RECONF_SENT) | RECONF_DONE
            if slave.flags & (RECONF_SENT | RECONF_INPROG) or slave.link.disconnected:
                continue
            if self._links.send_slaveof(slave, promoted.addr):
                slave.flags |= RECONF_SENT
                slave.slave_reconf_sent_time = now
                self._outbox.event(NOTICE, "+slave-reconf-sent", slave, "")
                in_progress += 1
        self._detect_end(master)

    def switch_to_promoted(self, master: Instance) -> None:
        """The failover ended: our master is the promoted replica (+switch-master)."""
        ref = master.promoted_slave if master.promoted_slave is not None else master
        self._outbox.event(
            WARNING,
            "+switch-master",
            master,
            f"{master.name} {master.addr.host} {master.addr.port} {ref.addr.host} {ref.addr.port}",
            describe=False,
        )
        self._registry.reset_master_and_change_address(master, ref.addr.host, ref.addr.port)

    # ------------------------------------------------------------------ acting on INFO

    def on_info(self, ri: Instance, report: InfoReport) -> None:
        """The acting half of sentinelRefreshInstanceInfo (not in TILT): the role an instance
        reports (`ri.role_reported`, just refreshed by discovery.py) against ours for it."""
        state = self._state
        outbox = self._outbox
        now = state.now
        role = ri.role_reported
        master = ri.master
        if ri.flags & MASTER and role == MASTER and ri.failover_state == FAILOVER_WAIT_RETENURE:
            if report.epoch == ri.failover_epoch and report.leads_epoch:
                self._retenure.end(ri)
        if ri.flags & SLAVE and role == MASTER:
            assert master is not None
            # In fenced mode, promoted means promoted in our epoch (a replica that already
            # reported itself master, a stranded one, may not have taken ours yet).
            in_our_epoch = not master.fenced or report.epoch is None or report.epoch == master.failover_epoch
            if (ri.flags & PROMOTED and master.flags & FAILOVER_IN_PROGRESS
                    and master.failover_state == FAILOVER_WAIT_PROMOTION and in_our_epoch):
                # The promotion worked: the new configuration gets our failover's epoch, so the
                # other sentinels adopt it (unless they know a newer one).
                master.config_epoch = master.failover_epoch
                master.failover_state = FAILOVER_RECONF_SLAVES
                master.failover_state_change_time = now
                outbox.flush()
                outbox.event(WARNING, "+promoted-slave", ri, "")
                if state.simfailure_flags & SIMFAILURE_CRASH_AFTER_PROMOTION:
                    outbox.crash()
                    return
                outbox.event(WARNING, "+failover-state-reconf-slaves", master, "")
                outbox.client_reconf_script(master, "leader", master.addr, ri.addr)
                self._discovery.force_hello_update(master)
            else:
                # A replica turned master behind our back (a returning old master): force our
                # view, after giving a failover leader time to announce a newer one.
                wait_time = state.timings.publish_period * 4
                if (
                    not ri.flags & PROMOTED
                    and self._detection.master_looks_sane(master)
                    and ri.no_down_for(now, wait_time)
                    and now - ri.role_reported_time > wait_time
                ):
                    if self._links.send_slaveof(ri, master.addr):
                        outbox.event(NOTICE, "+convert-to-slave", ri, "")
        if ri.flags & SLAVE and role == SLAVE:
            assert master is not None
            reported = ri.slave_master_host
            if ri.slave_master_port != master.addr.port or reported is None or not master.addr.is_host(reported):
                wait_time = master.failover_timeout
                if (
                    self._detection.master_looks_sane(master)
                    and ri.no_down_for(now, wait_time)
                    and now - ri.slave_conf_change_time > wait_time
                ):
                    if self._links.send_slaveof(ri, master.addr):
                        outbox.event(NOTICE, "+fix-slave-config", ri, "")
            promoted = master.promoted_slave
            if ri.flags & RECONF_SENT and reported and promoted is not None:
                if promoted.addr.is_host(reported) and ri.slave_master_port == promoted.addr.port:
                    ri.flags = (ri.flags & ~RECONF_SENT) | RECONF_INPROG
                    outbox.event(NOTICE, "+slave-reconf-inprog", ri, "")
            if ri.flags & RECONF_INPROG and ri.slave_master_link_up:
                ri.flags = (ri.flags & ~RECONF_INPROG) | RECONF_DONE
                outbox.event(NOTICE, "+slave-reconf-done", ri, "")
