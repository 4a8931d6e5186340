"""Discovery: what a sentinel learns of the instances and of the other sentinels — the
INFO replies of masters and replicas (their run id, role, replicas, replication state and
fenced-mode figures), and the hello messages sentinels publish on `__sentinel__:hello` every
2 s (who they are, their current epoch, and the master's address with its config epoch).
A newer epoch and a newer master configuration announced in a hello are adopted here.

What a sentinel *does* about an INFO reply (a promotion that worked, a replica to re-point)
is the failover's business (failover.py, `Failover.on_info`)."""

from __future__ import annotations

from node.sentinel.hello import Hello, parse_hello
from node.sentinel.info_reply import InfoReport, parse_info
from node.sentinel.instance import MASTER, MASTER_REBOOT, SENTINEL, SLAVE, FencedSettings, Instance
from node.sentinel.messages import NOTICE, VERBOSE, WARNING, RespError, Value
from node.sentinel.policy.connections import PUBLISH, Connections
from node.sentinel.policy.outbox import Outbox
from node.sentinel.policy.registry import Registry
from node.sentinel.policy.state import SentinelError, State
from node.sentinel.timings import HELLO_CHANNEL


class Discovery:
    """INFO refresh and hello gossip."""

    def __init__(self, state: State, outbox: Outbox, links: Connections, registry: Registry) -> None:
        self._state = state
        self._outbox = outbox
        self._links = links
        self._registry = registry

    # ------------------------------------------------------------------ INFO

    def refresh_info(self, ri: Instance, text: str) -> InfoReport:
        """The learning half of sentinelRefreshInstanceInfo: record what an INFO reply says
        (and announce a reboot, a new replica, a role change)."""
        now = self._state.now
        ri.info = text
        ri.master_link_down_time = 0
        report = parse_info(text, is_master=bool(ri.flags & MASTER))
        if report.run_id is not None:
            if ri.runid is None:
                ri.runid = report.run_id
            elif ri.runid != report.run_id:
                self._outbox.event(NOTICE, "+reboot", ri, "")
                if ri.flags & MASTER and ri.master_reboot_down_after_period != 0:
                    ri.flags |= MASTER_REBOOT
                    ri.master_reboot_since_time = now
                ri.runid = report.run_id
        for host, port in report.replicas:
            if self._registry.lookup_slave(ri, host, port) is None:
                try:
                    slave = self._registry.create(None, SLAVE, host, port, ri.quorum, ri)
                except SentinelError:
                    continue
                self._outbox.event(NOTICE, "+slave", slave, "")
                self._outbox.flush()
        ri.master_link_down_time = report.master_link_down_ms
        ri.node_id = report.fenced_node_id
        ri.fenced_settings = FencedSettings(report.fenced_replica_set_size or 0, report.fenced_lease_milliseconds or 0)
        ri.fence_epoch, ri.node_epoch, ri.leads_epoch = report.fence_epoch, report.epoch, report.leads_epoch
        role = MASTER if report.role == "master" else SLAVE if report.role == "slave" else 0
        if role == SLAVE:
            if report.master_host is not None and (
                ri.slave_master_host is None or report.master_host.lower() != ri.slave_master_host.lower()
            ):
                ri.slave_master_host = report.master_host
                ri.slave_conf_change_time = now
            if report.master_port is not None and report.master_port != ri.slave_master_port:
                ri.slave_master_port = report.master_port
                ri.slave_conf_change_time = now
            if report.master_link_up is not None:
                ri.slave_master_link_up = report.master_link_up
            if report.slave_priority is not None:
                ri.slave_priority = report.slave_priority
            if report.slave_repl_offset is not None:
                ri.slave_repl_offset = report.slave_repl_offset
            if report.replica_announced is not None:
                ri.replica_announced = report.replica_announced
        ri.info_refresh = now
        if role != ri.role_reported:
            ri.role_reported_time = now
            ri.role_reported = role
            if role == SLAVE:
                ri.slave_conf_change_time = now
            coherent = (ri.flags & (MASTER | SLAVE)) == role
            self._outbox.event(
                VERBOSE,
                "+role-change" if coherent else "-role-change",
                ri,
                f" new reported role is {'master' if role == MASTER else 'slave'}",
            )
        return report

    # ------------------------------------------------------------------ hello

    def send_hello(self, ri: Instance) -> bool:
        master = ri if ri.flags & MASTER else ri.master
        assert master is not None
        if ri.link.disconnected:
            return False
        state = self._state
        ip = state.announce_ip or ri.link.local_ip
        if ip is None:
            return False
        address = master.current_address()
        hello = Hello(
            ip,
            state.announce_port or state.port,
            state.myid,
            state.current_epoch,
            master.name,
            address.host,
            address.port,
            master.config_epoch,
        )
        return self._links.send(ri, ri.link.cc, PUBLISH, "PUBLISH", HELLO_CHANNEL, hello.payload())

    def on_publish_reply(self, ri: Instance, value: Value) -> None:
        if not isinstance(value, RespError):
            ri.last_pub_time = self._state.now

    def force_hello_update(self, master: Instance) -> None:
        """Make the next timer run publish a hello everywhere (after a config change)."""
        step = self._state.timings.publish_period + 1
        for ri in [master, *master.sentinels.values(), *master.slaves.values()]:
            if ri.last_pub_time >= step:
                ri.last_pub_time -= step

    def on_message(self, payload: bytes) -> None:
        """A message on a node's `__sentinel__:hello` subscription."""
        text = payload.decode("latin-1")
        if self._state.myid in text:
            return  # our own hello
        self.process_hello(text)

    def process_hello(self, payload: str) -> None:
        """sentinelProcessHelloMessage: discover the sender, adopt a newer epoch and a newer
        master configuration."""
        hello = parse_hello(payload)
        if hello is None:
            return
        state = self._state
        outbox = self._outbox
        registry = self._registry
        master = state.masters.get(hello.master_name)
        if master is None:
            return
        si = registry.find_by_addr_and_runid(master.sentinels.values(), hello.ip, hello.port, hello.runid)
        if si is None:
            # A sentinel we know under another address changed address: forget the old entry.
            removed = registry.remove_matching_sentinel(master, hello.runid)
            if removed:
                outbox.event(
                    NOTICE, "+sentinel-address-switch", master, f" ip {hello.ip} port {hello.port} for {hello.runid}"
                )
            else:
                other = registry.find_by_addr_and_runid(master.sentinels.values(), hello.ip, hello.port, None)
                if other is not None:
                    # Another sentinel claims this address: the old one is gone everywhere.
                    outbox.event(NOTICE, "+sentinel-invalid-addr", other, "")
                    obsolete = other.runid
                    for m in list(state.masters.values()):
                        if obsolete is not None:
                            registry.remove_matching_sentinel(m, obsolete)
            try:
                si = registry.create(hello.runid, SENTINEL, hello.ip, hello.port, master.quorum, master)
            except SentinelError:
                si = None
            if si is not None:
                if not removed:
                    outbox.event(NOTICE, "+sentinel", si, "")
                si.runid = hello.runid
                registry.try_connection_sharing(si)
                if removed:
                    registry.update_sentinel_address_in_all_masters(si)
                outbox.flush()
        if hello.current_epoch > state.current_epoch:
            state.current_epoch = hello.current_epoch
            outbox.flush()
            outbox.event(WARNING, "+new-epoch", master, str(state.current_epoch), describe=False)
        if si is not None and master.config_epoch < hello.master_config_epoch:
            master.config_epoch = hello.master_config_epoch
            if hello.master_port != master.addr.port or not master.addr.is_host(hello.master_ip):
                outbox.event(WARNING, "+config-update-from", si, "")
                outbox.event(
                    WARNING,
                    "+switch-master",
                    master,
                    f"{master.name} {master.addr.host} {master.addr.port} {hello.master_ip} {hello.master_port}",
                    describe=False,
                )
                old = master.addr
                if registry.reset_master_and_change_address(master, hello.master_ip, hello.master_port):
                    outbox.client_reconf_script(master, "observer", old, master.addr)
        if si is not None:
            si.last_hello_time = state.now
