"""The instances a sentinel monitors and discovers: creating them with Redis's checks,
finding them by address and run id, releasing them, sharing one link between the masters
that know the same sentinel, and resetting a master (SENTINEL RESET, and the switch to a new
address that ends a failover or follows a newer configuration)."""

from __future__ import annotations

from collections.abc import Iterable

from node.sentinel.fenced import forget_fencing
from node.sentinel.instance import (
    FAILOVER_NONE,
    MASTER,
    PROMOTED,
    SLAVE,
    Addr,
    Instance,
    Link,
)
from node.sentinel.messages import NOTICE, WARNING
from node.sentinel.policy.connections import Connections
from node.sentinel.policy.outbox import Outbox
from node.sentinel.policy.state import SentinelError, State


class Registry:
    """The masters, each with its replicas and sentinels (`State.masters`)."""

    def __init__(self, state: State, outbox: Outbox, links: Connections) -> None:
        self._state = state
        self._outbox = outbox
        self._links = links

    def create(self, name: str | None, flags: int, host: str, port: int, quorum: int,
               master: Instance | None) -> Instance:
        """createSentinelRedisInstance; raises SentinelError with Redis's reason."""
        if port < 0 or port > 65535:
            raise SentinelError("Invalid port number.")
        if not self._state.valid_host(host):
            raise SentinelError("Can't resolve instance hostname.")
        addr = Addr(host, port)
        if flags & SLAVE:
            name = addr.key()
        assert name is not None
        if flags & MASTER:
            table = self._state.masters
            duplicate = "Duplicate master name."
        elif flags & SLAVE:
            assert master is not None
            table = master.slaves
            duplicate = "Duplicate hostname and port for replica."
        else:
            assert master is not None
            table = master.sentinels
            duplicate = "Duplicate runid for sentinel."
        if name in table:
            raise SentinelError(duplicate)
        now = self._state.now
        timings = self._state.timings
        ri = Instance(
            flags=flags,
            name=name,
            addr=addr,
            link=Link(created=now),
            master=master,
            created=now,
            last_pub_time=now,
            last_hello_time=now,
            last_master_down_reply_time=now,
            down_after_period=master.down_after_period if master is not None else timings.default_down_after,
            failover_timeout=timings.default_failover_timeout,
            quorum=quorum,
            role_reported=flags & (MASTER | SLAVE),
            role_reported_time=now,
            slave_conf_change_time=now,
        )
        table[name] = ri
        return ri

    def release(self, ri: Instance) -> None:
        """releaseSentinelRedisInstance: with its replicas and sentinels, and its link unless
        another master's sentinel shares it."""
        for child in list(ri.sentinels.values()) + list(ri.slaves.values()):
            self.release(child)
        ri.sentinels = {}
        ri.slaves = {}
        link = ri.link
        link.refcount -= 1
        if link.refcount == 0:
            self._links.close_link(link)
        ri.released = True
        if ri.flags & SLAVE and ri.flags & PROMOTED and ri.master is not None:
            ri.master.promoted_slave = None

    def find_by_addr_and_runid(
        self, instances: Iterable[Instance], host: str | None, port: int, runid: str | None
    ) -> Instance | None:
        """getSentinelRedisInstanceByAddrAndRunID: by address, by run id, or both."""
        if host is not None and (port < 0 or port > 65535 or not self._state.valid_host(host)):
            return None
        for ri in instances:
            if runid is not None and ri.runid is None:
                continue
            if (runid is None or ri.runid == runid) and (host is None or ri.addr.same(Addr(host, port))):
                return ri
        return None

    def lookup_slave(self, master: Instance, host: str, port: int) -> Instance | None:
        if port < 0 or port > 65535 or not self._state.valid_host(host):
            return None
        return master.slaves.get(Addr(host, port).key())

    # ------------------------------------------------------------------ sentinels

    def try_connection_sharing(self, si: Instance) -> None:
        """Use the link another master already has to the same sentinel (by run id)."""
        if si.runid is None or si.link.refcount > 1:
            return
        for master in self._state.masters.values():
            if master is si.master:
                continue
            match = self.find_by_addr_and_runid(master.sentinels.values(), None, 0, si.runid)
            if match is None or match is si:
                continue
            old = si.link
            old.refcount -= 1
            if old.refcount == 0:
                self._links.close_link(old)
            si.link = match.link
            match.link.refcount += 1
            return

    def update_sentinel_address_in_all_masters(self, ri: Instance) -> None:
        reconfigured = 0
        for master in self._state.masters.values():
            match = self.find_by_addr_and_runid(master.sentinels.values(), None, 0, ri.runid)
            if match is None:
                continue
            self._links.close_link(match.link)
            if match is ri:
                continue
            match.addr = ri.addr
            reconfigured += 1
        if reconfigured:
            self._outbox.event(NOTICE, "+sentinel-address-update", ri, f" {reconfigured} additional matching instances")

    def remove_matching_sentinel(self, master: Instance, runid: str) -> int:
        removed = 0
        for name, ri in list(master.sentinels.items()):
            if ri.runid == runid:
                del master.sentinels[name]
                self.release(ri)
                removed += 1
        return removed

    # ------------------------------------------------------------------ master reset

    def reset_master(self, master: Instance, *, keep_sentinels: bool, announce: bool) -> None:
        """sentinelResetMaster: forget replicas (and sentinels), runtime flags and any
        failover, and reconnect."""
        now = self._state.now
        for slave in list(master.slaves.values()):
            self.release(slave)
        master.slaves = {}
        if not keep_sentinels:
            for si in list(master.sentinels.values()):
                self.release(si)
            master.sentinels = {}
        link = master.link
        self._links.close_link(link)
        master.flags &= MASTER
        master.leader = None
        master.failover_state = FAILOVER_NONE
        master.failover_state_change_time = 0
        master.failover_start_time = 0  # a new failover may start at once
        master.promoted_slave = None
        forget_fencing(master)
        master.stranded_since = 0
        master.stranded_epochs = None
        master.runid = None
        master.node_id = None
        master.fenced_settings = None
        master.fence_epoch = master.node_epoch = master.leads_epoch = None
        master.slave_master_host = None
        link.act_ping_time = now
        link.last_ping_time = 0
        link.last_avail_time = now
        link.last_pong_time = now
        master.role_reported_time = now
        master.role_reported = MASTER
        if announce:
            self._outbox.event(WARNING, "+reset-master", master, "")

    def reset_master_and_change_address(self, master: Instance, host: str, port: int) -> bool:
        """Switch a master to a new address (+switch-master): the old address and the other
        replicas become its replicas, so the old master can be found and reconfigured."""
        if port < 0 or port > 65535 or not self._state.valid_host(host):
            return False
        new = Addr(host, port)
        replicas = [s.addr for s in master.slaves.values() if not s.addr.same(new)]
        if not new.same(master.addr):
            replicas.append(master.addr)
        self.reset_master(master, keep_sentinels=True, announce=False)
        master.addr = new
        master.o_down_since_time = 0
        master.s_down_since_time = 0
        for addr in replicas:
            try:
                slave = self.create(None, SLAVE, addr.host, addr.port, master.quorum, master)
            except SentinelError:
                continue
            self._outbox.event(NOTICE, "+slave", slave, "")
        self._outbox.flush()
        return True
