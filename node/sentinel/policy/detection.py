"""Failure detection: SDOWN (no valid PING reply for down-after-milliseconds, a master
reporting itself a replica for too long, a rebooted master past
master-reboot-down-after-period), ODOWN (SDOWN here and enough other sentinels saying "down"
within the last 5 s to reach the quorum), and the SENTINEL IS-MASTER-DOWN-BY-ADDR exchange
that asks the others — every second while SDOWN, and for their vote once a failover started
(the answers' votes are counted by voting.py)."""

from __future__ import annotations

from node.sentinel.instance import (
    FAILOVER_NONE,
    MASTER,
    MASTER_DOWN,
    MASTER_REBOOT,
    O_DOWN,
    S_DOWN,
    SCRIPT_KILL_SENT,
    SLAVE,
    Instance,
)
from node.sentinel.messages import NOTICE, WARNING, RespError, Value
from node.sentinel.policy.connections import DISCARD, IS_MASTER_DOWN, Connections
from node.sentinel.policy.outbox import Outbox
from node.sentinel.policy.state import State


class Detection:
    """SDOWN and ODOWN of the instances, from PING replies and the other sentinels' answers."""

    def __init__(self, state: State, outbox: Outbox, links: Connections) -> None:
        self._state = state
        self._outbox = outbox
        self._links = links

    def on_ping_reply(self, ri: Instance, value: Value) -> None:
        link = ri.link
        now = self._state.now
        text = value if isinstance(value, str) else value.text if isinstance(value, RespError) else None
        if text is not None:
            if text.startswith(("PONG", "LOADING", "MASTERDOWN")):
                link.last_avail_time = now
                link.act_ping_time = 0
                if ri.flags & MASTER_REBOOT and text.startswith("PONG"):
                    ri.flags &= ~MASTER_REBOOT
            elif text.startswith("BUSY") and ri.flags & S_DOWN and not ri.flags & SCRIPT_KILL_SENT:
                # A script is keeping the instance busy: kill it (once per SDOWN period).
                self._links.send(ri, link.cc, DISCARD, "SCRIPT", "KILL")
                ri.flags |= SCRIPT_KILL_SENT
        link.last_pong_time = now

    def check_sdown(self, ri: Instance) -> None:
        link = ri.link
        now = self._state.now
        timings = self._state.timings
        elapsed = 0
        if link.act_ping_time:
            elapsed = now - link.act_ping_time
        elif link.disconnected:
            elapsed = now - link.last_avail_time
        half_down = ri.down_after_period // 2
        # A connection that looks connected but stopped answering is reconnected (not before
        # it lived MIN-LINK-RECONNECT-PERIOD, so a slow instance is not reconnected in a loop).
        if (
            link.cc is not None
            and now - link.cc_conn_time > timings.min_link_reconnect_period
            and link.act_ping_time != 0
            and now - link.act_ping_time > half_down
            and now - link.last_pong_time > half_down
        ):
            self._links.close(link, link.cc)
        if (
            link.pc is not None
            and now - link.pc_conn_time > timings.min_link_reconnect_period
            and now - link.pc_last_activity > timings.publish_period * 3
        ):
            self._links.close(link, link.pc)
        down = (
            elapsed > ri.down_after_period
            or (
                ri.flags & MASTER
                and ri.role_reported == SLAVE
                and now - ri.role_reported_time > ri.down_after_period + timings.info_period * 2
            )
            or (ri.flags & MASTER_REBOOT and now - ri.master_reboot_since_time > ri.master_reboot_down_after_period)
        )
        if down:
            if not ri.flags & S_DOWN:
                self._outbox.event(WARNING, "+sdown", ri, "")
                ri.s_down_since_time = now
                ri.flags |= S_DOWN
        elif ri.flags & S_DOWN:
            self._outbox.event(WARNING, "-sdown", ri, "")
            ri.flags &= ~(S_DOWN | SCRIPT_KILL_SENT)

    def check_odown(self, master: Instance) -> None:
        """ODOWN is a weak quorum: enough sentinels said "down" within the last 5 s."""
        quorum = 0
        odown = False
        if master.flags & S_DOWN:
            quorum = 1 + sum(1 for si in master.sentinels.values() if si.flags & MASTER_DOWN)
            odown = quorum >= master.quorum
        if odown:
            if not master.flags & O_DOWN:
                self._outbox.event(WARNING, "+odown", master, f" #quorum {quorum}/{master.quorum}")
                master.flags |= O_DOWN
                master.o_down_since_time = self._state.now
        elif master.flags & O_DOWN:
            self._outbox.event(WARNING, "-odown", master, "")
            master.flags &= ~O_DOWN

    def ask_others(self, master: Instance, *, forced: bool) -> None:
        """Ask every connected sentinel whether our SDOWN master is down (and, once we are
        failing over, for its vote)."""
        state = self._state
        now = state.now
        ask_period = state.timings.ask_period
        for si in master.sentinels.values():
            if now - si.last_master_down_reply_time > ask_period * 5:
                si.flags &= ~MASTER_DOWN
                si.leader = None
            # A re-tenure asks for votes for a master that is not down (the answer says so).
            if not (master.flags & S_DOWN or master.retenure) or si.link.disconnected:
                continue
            if not forced and now - si.last_master_down_reply_time < ask_period:
                continue
            self._links.send(
                si,
                si.link.cc,
                IS_MASTER_DOWN,
                "SENTINEL",
                "is-master-down-by-addr",
                master.addr.host,
                str(master.addr.port),
                # Votes are asked for the failover's own epoch (Redis asks in its current
                # epoch, which may have moved on: see voting.Voting.leader).
                str(master.failover_epoch if master.failover_state > FAILOVER_NONE else state.current_epoch),
                state.myid if master.failover_state > FAILOVER_NONE else "*",
            )

    def on_is_master_down_reply(self, ri: Instance, value: Value) -> None:
        if not (
            isinstance(value, list)
            and len(value) == 3
            and isinstance(value[0], int)
            and isinstance(value[1], bytes)
            and isinstance(value[2], int)
        ):
            return  # an error or an unexpected reply: the answer just ages out
        ri.last_master_down_reply_time = self._state.now
        if value[0] == 1:
            ri.flags |= MASTER_DOWN
        else:
            ri.flags &= ~MASTER_DOWN
        leader = value[1].decode("latin-1")
        if leader != "*":
            if ri.leader_epoch != value[2]:
                self._outbox.log(NOTICE, f"{ri.name} voted for {leader} {value[2]}")
            ri.leader = leader
            ri.leader_epoch = value[2]

    def master_looks_sane(self, master: Instance) -> bool:
        """Reachable, reporting itself master, not down, and its INFO recent."""
        return (
            bool(master.flags & MASTER)
            and master.role_reported == MASTER
            and not master.flags & (S_DOWN | O_DOWN)
            and self._state.now - master.info_refresh < self._state.timings.info_period * 2
        )
