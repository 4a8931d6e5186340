"""What one sentinel knows about a monitored master, its replicas and the other sentinels
(sentinel.c's sentinelRedisInstance and instanceLink).

An `Instance` is a plain record the policy mutates; flags and failover states are Redis's
bits and values, so replies can print them exactly as Redis does. A `Link` is the pair of
connections (commands, Pub/Sub) to an instance with the timers failure detection needs; the
links to one sentinel are shared by every master it monitors with us, as Redis shares them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

# Instance flags (SRI_*), with Redis's bit values.
MASTER: Final = 1 << 0
SLAVE: Final = 1 << 1
SENTINEL: Final = 1 << 2
S_DOWN: Final = 1 << 3  # subjectively down (no quorum)
O_DOWN: Final = 1 << 4  # objectively down (confirmed by others)
MASTER_DOWN: Final = 1 << 5  # a sentinel with this flag set thinks our master is down
FAILOVER_IN_PROGRESS: Final = 1 << 6
PROMOTED: Final = 1 << 7  # the replica selected for promotion
RECONF_SENT: Final = 1 << 8  # SLAVEOF <new master> sent
RECONF_INPROG: Final = 1 << 9  # the replica is syncing with the new master
RECONF_DONE: Final = 1 << 10  # the replica synced with the new master
FORCE_FAILOVER: Final = 1 << 11  # SENTINEL FAILOVER: no election needed
SCRIPT_KILL_SENT: Final = 1 << 12  # SCRIPT KILL already sent on -BUSY
MASTER_REBOOT: Final = 1 << 13  # the master was seen rebooting

# The order and names Redis prints flags in (addReplySentinelRedisInstance); "disconnected"
# is not a flag but the link's state and goes after "sentinel".
FLAG_NAMES: Final = (
    (S_DOWN, "s_down"),
    (O_DOWN, "o_down"),
    (MASTER, "master"),
    (SLAVE, "slave"),
    (SENTINEL, "sentinel"),
    (0, "disconnected"),
    (MASTER_DOWN, "master_down"),
    (FAILOVER_IN_PROGRESS, "failover_in_progress"),
    (PROMOTED, "promoted"),
    (RECONF_SENT, "reconf_sent"),
    (RECONF_INPROG, "reconf_inprog"),
    (RECONF_DONE, "reconf_done"),
    (FORCE_FAILOVER, "force_failover"),
    (SCRIPT_KILL_SENT, "script_kill_sent"),
    (MASTER_REBOOT, "master_reboot"),
)

# Failover states. Redis numbers them 0..6 and compares them (">= RECONF_SLAVES" means the
# promoted replica already accepted its role); fenced mode adds two states between the
# election and the selection, so the values are spaced to keep those comparisons valid.
FAILOVER_NONE: Final = 0
FAILOVER_WAIT_START: Final = 10  # waiting to win the election
DEFAULT_FENCED_LEASE_MS: Final = 1000  # the nodes' fenced-lease-milliseconds default

FAILOVER_FENCE: Final = 11  # fenced mode: fencing a majority of the replicas
FAILOVER_WAIT_LEASE: Final = 12  # fenced mode: waiting out the old primary's lease
FAILOVER_SELECT_SLAVE: Final = 20
FAILOVER_SEND_SLAVEOF_NOONE: Final = 30
FAILOVER_WAIT_PROMOTION: Final = 40
# Fenced mode's re-tenure: the master, chosen, was sent SLAVEOF NO ONE EPOCH; waiting for its
# INFO to show it leads that epoch.
FAILOVER_WAIT_RETENURE: Final = 45
FAILOVER_RECONF_SLAVES: Final = 50
FAILOVER_UPDATE_CONFIG: Final = 60  # done: switch our master to the promoted replica

FAILOVER_STATE_NAMES: Final = {
    FAILOVER_NONE: "none",
    FAILOVER_WAIT_START: "wait_start",
    FAILOVER_FENCE: "fence",
    FAILOVER_WAIT_LEASE: "wait_lease",
    FAILOVER_SELECT_SLAVE: "select_slave",
    FAILOVER_SEND_SLAVEOF_NOONE: "send_slaveof_noone",
    FAILOVER_WAIT_PROMOTION: "wait_promotion",
    FAILOVER_WAIT_RETENURE: "wait_retenure",
    FAILOVER_RECONF_SLAVES: "reconf_slaves",
    FAILOVER_UPDATE_CONFIG: "update_config",
}


@dataclass(frozen=True, slots=True)
class Addr:
    """An instance address as configured or announced. Host names are compared without
    case, as Redis compares the names it could not resolve."""

    host: str
    port: int

    def same(self, other: Addr) -> bool:
        return self.port == other.port and self.host.lower() == other.host.lower()

    def is_host(self, host: str) -> bool:
        return self.host.lower() == host.lower()

    def key(self) -> str:
        """`ip:port`, IPv6 bracketed (announceSentinelAddrAndPort): a replica's name."""
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"


@dataclass(eq=False, slots=True)
class Link:
    """The command and Pub/Sub connections to an instance, by connection id (None: not
    connected), and the times failure detection reads."""

    created: int  # time the link was created: timers start from it
    refcount: int = 1
    disconnected: bool = True  # a connection is missing (the Pub/Sub one only for nodes)
    pending_commands: int = 0
    cc: int | None = None  # command connection
    pc: int | None = None  # Pub/Sub connection
    cc_conn_time: int = 0
    pc_conn_time: int = 0
    pc_last_activity: int = 0
    local_ip: str | None = None  # our address on the command connection (announced in hellos)
    last_avail_time: int = 0  # last valid PING reply (PONG, LOADING, MASTERDOWN)
    # Sent time of the oldest PING still unanswered, 0 when none: SDOWN counts from it.
    act_ping_time: int = 0
    last_ping_time: int = 0  # last PING sent (to space them)
    last_pong_time: int = 0  # last PING reply of any kind (link activity)
    last_reconn_time: int = 0

    def __post_init__(self) -> None:
        # The timers start "now" even before any connection, so an instance that can never be
        # reached goes SDOWN after down-after-milliseconds.
        self.act_ping_time = self.created
        self.last_avail_time = self.created
        self.last_pong_time = self.created


@dataclass(frozen=True, slots=True)
class FenceReply:
    """A replica's answer to FENCE: the epoch it is fenced at, the epoch of the last entry of
    its log, its log's end offset and its node id (docs/safety.md, *Fenced mode*)."""

    fence_epoch: int
    log_epoch: int
    offset: int
    node_id: str
    time: int  # when we received it


@dataclass(frozen=True, slots=True)
class FencedSettings:
    """What a node's INFO says of fenced mode: its fenced-replica-set-size (0: fenced mode is
    off) and fenced-lease-milliseconds."""

    size: int
    lease_ms: int


@dataclass(eq=False, slots=True)
class Instance:
    """A master, a replica or a sentinel as one sentinel sees it (fields as in sentinel.c)."""

    flags: int
    name: str  # master: its name; replica: ip:port; sentinel: its run id
    addr: Addr
    link: Link
    master: Instance | None  # for replicas and sentinels: the master they belong to
    created: int
    runid: str | None = None
    config_epoch: int = 0
    last_pub_time: int = 0  # last hello we published to it
    last_hello_time: int = 0  # sentinels: last hello received from it
    last_master_down_reply_time: int = 0  # sentinels: last IS-MASTER-DOWN-BY-ADDR reply
    s_down_since_time: int = 0
    o_down_since_time: int = 0
    down_after_period: int = 30_000
    master_reboot_down_after_period: int = 0
    master_reboot_since_time: int = 0
    info_refresh: int = 0  # when the last INFO reply arrived, 0 = never
    info: str | None = None  # that reply, for SENTINEL INFO-CACHE
    renamed_commands: dict[str, str] = field(default_factory=dict)  # name (as configured) -> new name
    # The role the instance reports in INFO and since when: our configuration wins only after
    # a delay, to give a failover leader time to announce a new one.
    role_reported: int = 0
    role_reported_time: int = 0
    slave_conf_change_time: int = 0  # last time the replica's master address changed
    # Masters only.
    sentinels: dict[str, Instance] = field(default_factory=dict)
    slaves: dict[str, Instance] = field(default_factory=dict)
    quorum: int = 0
    parallel_syncs: int = 1
    auth_pass: str | None = None
    auth_user: str | None = None
    notification_script: str | None = None
    client_reconfig_script: str | None = None
    # Replicas only (from INFO).
    master_link_down_time: int = 0
    slave_priority: int = 100
    replica_announced: int = 1
    slave_reconf_sent_time: int = 0
    slave_master_host: str | None = None
    slave_master_port: int = 0
    slave_master_link_up: bool = False
    slave_repl_offset: int = 0
    # Failover. Masters: the leader voted for in leader_epoch; sentinels: their vote.
    leader: str | None = None
    leader_epoch: int = 0
    failover_epoch: int = 0
    failover_state: int = FAILOVER_NONE
    failover_state_change_time: int = 0
    failover_start_time: int = 0
    failover_timeout: int = 180_000
    failover_delay_logged: int = 0
    promoted_slave: Instance | None = None
    # Fenced mode (masters: the settings; replicas: their answer to this failover's FENCE).
    fenced: bool = False
    # The nodes' lease (their fenced-lease-milliseconds, 1000 by default): what a fenced
    # failover waits out, stretched by the drift bound. Never 0: that would wait nothing.
    lease_ms: int = DEFAULT_FENCED_LEASE_MS
    fence_majority_time: int = 0
    fence_reply: FenceReply | None = None
    fence_sent_conn: int | None = None  # the connection FENCE was last sent on
    # Fenced mode, masters and replicas: the node's durable id and settings from its last INFO
    # at this address (None: none since).
    node_id: str | None = None
    fenced_settings: FencedSettings | None = None
    # Fenced mode, from the last INFO: the epoch the node promised to follow nothing older
    # than (`fence_epoch`), the epoch its log continues in (`epoch`) and, for a master,
    # whether it leads that epoch (`leads_epoch`); None while not reported.
    fence_epoch: int | None = None
    node_epoch: int | None = None
    leads_epoch: bool | None = None
    # Masters in fenced mode: the failover under way is a re-tenure (the master itself is a
    # candidate); since when the master was seen stranded (0: not now) with the same
    # (master's epoch, highest fence epoch).
    retenure: bool = False
    stranded_since: int = 0
    stranded_epochs: tuple[int | None, int] | None = None
    released: bool = False  # dropped from our tables: replies about it are discarded

    @property
    def kind(self) -> str:
        """sentinelRedisInstanceTypeStr."""
        if self.flags & MASTER:
            return "master"
        if self.flags & SLAVE:
            return "slave"
        if self.flags & SENTINEL:
            return "sentinel"
        return "unknown"

    def flag_names(self) -> list[str]:
        """The flags as SENTINEL MASTERS prints them, in Redis's order."""
        names = []
        for bit, name in FLAG_NAMES:
            if (bit == 0 and self.link.disconnected) or (bit and self.flags & bit):
                names.append(name)
        return names

    def describe(self) -> str:
        """`<type> <name> <ip> <port>` plus ` @ <master> <ip> <port>` for replicas and
        sentinels: the instance part of an event's payload (sentinelEvent's %@)."""
        text = f"{self.kind} {self.name} {self.addr.host} {self.addr.port}"
        master = self.master if not self.flags & MASTER else None
        if master is not None:
            text += f" @ {master.name} {master.addr.host} {master.addr.port}"
        return text

    def no_down_for(self, now: int, ms: int) -> bool:
        """No SDOWN or ODOWN began in the last `ms` (sentinelRedisInstanceNoDownFor)."""
        most_recent = max(self.s_down_since_time, self.o_down_since_time)
        return most_recent == 0 or now - most_recent > ms

    def current_address(self) -> Addr:
        """Where the master is: once the promoted replica accepted its role, its address
        (sentinelGetCurrentMasterAddress)."""
        promoted = self.promoted_slave
        if self.flags & FAILOVER_IN_PROGRESS and promoted is not None and self.failover_state >= FAILOVER_RECONF_SLAVES:
            return promoted.addr
        return self.addr
