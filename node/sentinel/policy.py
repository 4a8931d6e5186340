"""One sentinel's failure detection and failover as a pure state machine (Redis 7.2's
sentinel.c without its I/O).

The shell feeds `step()` what it observed — timer ticks, connections established or lost,
replies, Pub/Sub messages, each with the time it happened — and the commands other sentinels
and clients send (`is_master_down_by_addr`, `receive_hello`, `failover`, …). The policy never
reads a clock, opens a socket or draws unseeded randomness; what it wants done comes back as
a list of actions (`messages.Action`): connect, send a command, close, publish an event,
rewrite the configuration file. Given the same inputs it takes the same decisions, which is
what lets tests run hundreds of seeded failovers over a simulated network in seconds.

The rules, as sentinel.c has them:

- every instance gets PING every second (or every down-after-milliseconds if shorter), INFO
  every 10 s (replicas every second while their master is ODOWN or failing over, or while
  they report their master link down), and a hello on `__sentinel__:hello` every 2 s;
- SDOWN: no valid PING reply for down-after-milliseconds (or a master that reports itself a
  replica for down-after + 2 INFO periods, or a rebooted master past
  master-reboot-down-after-period);
- ODOWN: SDOWN here plus enough sentinels answering IS-MASTER-DOWN-BY-ADDR with 1 (asked every
  second while SDOWN; an answer older than 5 s no longer counts) to reach the quorum;
- failover: a new epoch, a vote (one per epoch, persisted before it is answered), a leader with
  an absolute majority of all known sentinels and at least the quorum, then select a replica,
  promote it with a MULTI block, wait for INFO to show it master, re-point the other replicas
  `parallel-syncs` at a time, and switch our configuration to the new master; each step is
  bounded by failover-timeout and the next attempt waits twice that long;
- the new configuration spreads with its config epoch in hello messages: a sentinel adopts a
  master address announced with a higher config epoch than its own;
- a replica reporting itself master outside a failover (a returning old master) is turned back
  into a replica, and replicas following the wrong master are re-pointed, once our master
  looks sane;
- TILT: when the timer runs more than 2 s late, or the wall clock jumps back or by more than
  2 s between two runs, act on nothing for 30 s.

Time: every input carries the shell's monotonic clock (CLOCK_BOOTTIME, node/sentinel/clock.py),
and every duration is measured on it, so a wall-clock step changes no timer; ticks also carry
the wall clock, which only TILT and the dates shown in log lines read.

Fenced mode (per master, off by default) inserts two steps between the election and the
selection — fence a majority of the replicas at the failover's epoch, then wait out the old
primary's lease — and promotes the fenced replica with the highest (epoch, offset), at that
position; it refuses to fail over while what it knows of the replica set disagrees with what
the nodes report (node/sentinel/fenced.py; docs/safety.md, *Fenced mode*).
"""

from __future__ import annotations

import functools
import ipaddress
import random
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Final

from node.commands.glob import glob_match
from node.sentinel import election, fenced, selection
from node.sentinel.fenced import lease_wait_ms
from node.sentinel.hello import Hello, parse_hello
from node.sentinel.info import parse_info
from node.sentinel.instance import (
    FAILOVER_FENCE,
    FAILOVER_IN_PROGRESS,
    FAILOVER_NONE,
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
    MASTER_DOWN,
    MASTER_REBOOT,
    O_DOWN,
    PROMOTED,
    RECONF_DONE,
    RECONF_INPROG,
    RECONF_SENT,
    S_DOWN,
    SCRIPT_KILL_SENT,
    SENTINEL,
    SLAVE,
    Addr,
    FencedSettings,
    FenceReply,
    Instance,
    Link,
)
from node.sentinel.messages import (
    NOTICE,
    VERBOSE,
    WARNING,
    Action,
    Close,
    Closed,
    Connect,
    Connected,
    Crash,
    Event,
    FlushConfig,
    Input,
    Log,
    Message,
    Reply,
    RespError,
    ScriptRun,
    Send,
    Tick,
    Value,
)
from node.sentinel.settings import (
    DEFAULT_ANNOUNCE_HOSTNAMES,
    DEFAULT_DENY_SCRIPTS_RECONFIG,
    DEFAULT_PORT,
    DEFAULT_RESOLVE_HOSTNAMES,
    HELLO_CHANNEL,
    MAX_DESYNC,
    MAX_PENDING_COMMANDS,
    SIMFAILURE_CRASH_AFTER_ELECTION,
    SIMFAILURE_CRASH_AFTER_PROMOTION,
    Timings,
)

# Request kinds: which reply callback handles the answer (sentinel.c's *ReplyCallback).
_DISCARD: Final = "discard"
_PING: Final = "ping"
_INFO: Final = "info"
_PUBLISH: Final = "publish"
_IS_MASTER_DOWN: Final = "is-master-down"
_SUBSCRIBE: Final = "subscribe"
_FENCE: Final = "fence"

# Fenced mode: the default clock drift bound, in parts per thousand of a duration.
DEFAULT_DRIFT_PERMILLE: Final = 50


class SentinelError(Exception):
    """A command the policy refuses; `message` is Redis's error text without the '-'."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class _Request:
    __slots__ = ("kind", "instance", "conn")

    def __init__(self, kind: str, instance: Instance, conn: int) -> None:
        self.kind = kind
        self.instance = instance
        self.conn = conn


class _Conn:
    __slots__ = ("link", "pubsub", "instance")

    def __init__(self, link: Link, pubsub: bool, instance: Instance) -> None:
        self.link = link
        self.pubsub = pubsub
        self.instance = instance


@functools.lru_cache(maxsize=1024)
def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


class Sentinel:
    """The state of one sentinel and the rules that change it."""

    def __init__(
        self,
        myid: str,
        *,
        now: int,
        rng: random.Random,
        port: int = DEFAULT_PORT,
        timings: Timings | None = None,
    ) -> None:
        self.myid = myid
        self.port = port
        self.now = now
        self.rng = rng
        self.timings = timings if timings is not None else Timings()
        self.current_epoch = 0
        self.masters: dict[str, Instance] = {}
        self.tilt = False
        self.tilt_start_time = 0
        self.previous_time = now
        # The wall clock at the last tick (None before the first), and wall minus monotonic
        # then: dates in log lines are the monotonic time shifted by it.
        self.previous_wall: int | None = None
        self.wall_offset = 0
        self.announce_ip: str | None = None
        self.announce_port = 0
        self.deny_scripts_reconfig = DEFAULT_DENY_SCRIPTS_RECONFIG
        self.resolve_hostnames = DEFAULT_RESOLVE_HOSTNAMES
        self.announce_hostnames = DEFAULT_ANNOUNCE_HOSTNAMES
        self.sentinel_auth_user: str | None = None
        self.sentinel_auth_pass: str | None = None
        # The server's requirepass: also what we authenticate to other sentinels with when no
        # sentinel-pass is set (all sentinels share one password, Redis's compatibility rule).
        self.requirepass: str | None = None
        self.running_scripts = 0
        self.scripts_queue_length = 0
        self.simfailure_flags = 0
        # Fenced mode's bound on the relative rate error of any two clocks, per thousand.
        self.drift_permille = DEFAULT_DRIFT_PERMILLE
        self._out: list[Action] = []
        self._flush_queued = False
        self._next_conn = 0
        self._next_request = 0
        self._conns: dict[int, _Conn] = {}
        self._requests: dict[int, _Request] = {}

    # ------------------------------------------------------------------ the shell's API

    def step(self, msg: Input) -> list[Action]:
        """Apply one observation and return what to do about it."""
        self.now = msg.now
        if isinstance(msg, Tick):
            self._timer(msg.now if msg.wall is None else msg.wall)
        elif isinstance(msg, Reply):
            self._on_reply(msg.conn, msg.request, msg.value)
        elif isinstance(msg, Message):
            self._on_message(msg.conn, msg.payload)
        elif isinstance(msg, Closed):
            self._connection_error(msg.conn)
        elif isinstance(msg, Connected):
            conn = self._conns.get(msg.conn)
            if conn is not None and conn.link.cc == msg.conn:
                conn.link.local_ip = msg.local_ip
        return self.take_actions()

    def take_actions(self) -> list[Action]:
        """The actions queued since the last call (commands queue them too)."""
        out, self._out = self._out, []
        self._flush_queued = False
        return out

    def next_tick_ms(self) -> int:
        """When to tick next: Redis changes its timer frequency to 10-19 Hz at random after
        every run, so sentinels started together do not ask for votes in lockstep."""
        return 1000 // (10 + self.rng.randrange(10))

    def started(self, now: int) -> list[Action]:
        """At start-up: a +monitor event for every configured master (sentinelIsRunning)."""
        self.now = now
        self.previous_time = now
        for master in self.masters.values():
            self._event(WARNING, "+monitor", master, f" quorum {master.quorum}")
        return self.take_actions()

    # ------------------------------------------------------------------ commands

    def monitor(self, name: str, host: str, port: int, quorum: int, *, now: int, announce: bool = True) -> Instance:
        """SENTINEL MONITOR (and `sentinel monitor` in the configuration file)."""
        self.now = now
        if quorum <= 0:
            raise SentinelError("Quorum must be 1 or greater.")
        master = self._create(name, MASTER, host, port, quorum, None)
        if announce:
            self._flush()
            self._event(WARNING, "+monitor", master, f" quorum {master.quorum}")
        return master

    def add_known_replica(self, master: Instance, host: str, port: int) -> Instance:
        """`sentinel known-replica` from the configuration file."""
        return self._create(None, SLAVE, host, port, master.quorum, master)

    def add_known_sentinel(self, master: Instance, host: str, port: int, runid: str) -> Instance:
        """`sentinel known-sentinel` from the configuration file."""
        si = self._create(runid, SENTINEL, host, port, master.quorum, master)
        si.runid = runid
        self._try_connection_sharing(si)
        return si

    def remove(self, name: str, *, now: int) -> None:
        """SENTINEL REMOVE."""
        self.now = now
        master = self.get_master(name)
        self._event(WARNING, "-monitor", master, "")
        del self.masters[name]
        self._release(master)
        self._flush()

    def reset(self, pattern: str, *, now: int) -> int:
        """SENTINEL RESET: forget the replicas, the sentinels and any failover of the masters
        whose names match the glob pattern; returns how many."""
        self.now = now
        count = 0
        for master in list(self.masters.values()):
            if glob_match(pattern.encode(), master.name.encode()):
                self._reset_master(master, keep_sentinels=False, announce=True)
                count += 1
        return count

    def failover(self, name: str, *, now: int) -> None:
        """SENTINEL FAILOVER: fail over now, without agreement from other sentinels."""
        self.now = now
        master = self.get_master(name)
        if master.flags & FAILOVER_IN_PROGRESS:
            raise SentinelError("INPROG Failover already in progress")
        if self._select(master) is None:
            raise SentinelError("NOGOODSLAVE No suitable replica to promote")
        self._log(NOTICE, f"Executing user requested FAILOVER of '{master.name}'")
        self._start_failover(master)
        master.flags |= FORCE_FAILOVER

    def is_master_down_by_addr(self, ip: str, port: int, req_epoch: int, runid: str, *, now: int) -> list[object]:
        """SENTINEL IS-MASTER-DOWN-BY-ADDR: whether we think that master is down (never while
        in TILT) and, when `runid` is not "*", our vote for the epoch — cast now if we have not
        voted in it yet. The reply is [down 0/1, leader run id or "*", leader epoch]."""
        self.now = now
        master = self._find_by_addr_and_runid(self.masters.values(), ip, port, None)
        isdown = int(not self.tilt and master is not None and bool(master.flags & S_DOWN) and bool(master.flags & MASTER))
        leader: str | None = None
        leader_epoch = 0
        if master is not None and master.flags & MASTER and runid != "*":
            leader, leader_epoch = self._vote(master, req_epoch, runid)
        return [isdown, (leader or "*").encode(), leader_epoch]

    def receive_hello(self, payload: str, *, now: int) -> None:
        """A hello sent to us directly (Sentinel's own PUBLISH on `__sentinel__:hello`)."""
        self.now = now
        self._process_hello(payload)

    def get_master(self, name: str) -> Instance:
        master = self.masters.get(name)
        if master is None:
            raise SentinelError("ERR No such master with that name")
        return master

    def quorum_status(self, master: Instance) -> tuple[int, bool, bool]:
        """(usable sentinels, the quorum is reachable, a majority is reachable): usable are
        we and every known sentinel not SDOWN/ODOWN (sentinelIsQuorumReachable)."""
        usable = 1 + sum(1 for si in master.sentinels.values() if not si.flags & (S_DOWN | O_DOWN))
        voters = len(master.sentinels) + 1
        return usable, usable >= master.quorum, usable >= voters // 2 + 1

    # ------------------------------------------------------------------ for the command layer

    def event(self, level: int, type_: str, ri: Instance | None, text: str) -> None:
        """A sentinelEvent raised by a command (SENTINEL SET's +set): `text` follows the
        instance's description."""
        self._event(level, type_, ri, text)

    def flush_config(self) -> None:
        """Queue a configuration rewrite (SENTINEL SET, CONFIG SET, FLUSHCONFIG)."""
        self._flush()

    def drop_instance_connections(self, master: Instance) -> None:
        """dropInstanceConnections: close the links to a master and its replicas (their
        credentials changed; the timer reconnects them)."""
        for ri in [master, *master.slaves.values()]:
            self._close(ri.link, ri.link.cc)
            self._close(ri.link, ri.link.pc)

    def drop_sentinel_connections(self) -> int:
        """sentinelDropConnections: close the links to every connected sentinel."""
        dropped = 0
        for master in self.masters.values():
            for si in master.sentinels.values():
                if not si.link.disconnected:
                    self._close(si.link, si.link.pc)
                    self._close(si.link, si.link.cc)
                    dropped += 1
        return dropped

    def set_down_after(self, master: Instance, period: int) -> None:
        """down-after-milliseconds of a master, its replicas and its sentinels
        (sentinelPropagateDownAfterPeriod)."""
        master.down_after_period = period
        for ri in [*master.slaves.values(), *master.sentinels.values()]:
            ri.down_after_period = period

    # ------------------------------------------------------------------ outputs

    def _event(self, level: int, type_: str, ri: Instance | None, text: str, *, describe: bool = True) -> None:
        """sentinelEvent: `text` follows the instance description when `describe` (the %@
        form), else it is the whole message."""
        message = ri.describe() + text if (describe and ri is not None) else text
        self._out.append(Event(level, type_, message))
        if level == WARNING and ri is not None:
            master = ri if ri.flags & MASTER else ri.master
            if master is not None and master.notification_script:
                self._out.append(ScriptRun(master.notification_script, (type_, message)))

    def _log(self, level: int, text: str) -> None:
        self._out.append(Log(level, text))

    def _flush(self) -> None:
        """sentinelFlushConfig: one rewrite per batch is enough, since the shell renders the
        file from the state once the batch is complete and before acting on the rest."""
        if not self._flush_queued:
            self._flush_queued = True
            self._out.append(FlushConfig())

    def _crash(self) -> None:
        """sentinelSimFailureCrash: the shell exits once the actions so far are done."""
        self._log(WARNING, "Sentinel CRASH because of SENTINEL simulate-failure")
        self._out.append(Crash())

    def _client_reconf_script(self, master: Instance, role: str, old: Addr, new: Addr) -> None:
        if master.client_reconfig_script:
            args = (master.name, role, "start", old.host, str(old.port), new.host, str(new.port))
            self._out.append(ScriptRun(master.client_reconfig_script, args))

    # ------------------------------------------------------------------ instances

    def valid_host(self, host: str) -> bool:
        """An address Redis would accept: an IP literal, or any name with resolve-hostnames
        (the shell resolves it when it connects)."""
        if self.resolve_hostnames:
            return bool(host)
        return _is_ip(host)

    def _create(self, name: str | None, flags: int, host: str, port: int, quorum: int, master: Instance | None) -> Instance:
        """createSentinelRedisInstance; raises SentinelError with Redis's reason."""
        if port < 0 or port > 65535:
            raise SentinelError("Invalid port number.")
        if not self.valid_host(host):
            raise SentinelError("Can't resolve instance hostname.")
        addr = Addr(host, port)
        if flags & SLAVE:
            name = addr.key()
        assert name is not None
        if flags & MASTER:
            table = self.masters
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
        now = self.now
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
            down_after_period=master.down_after_period if master is not None else self.timings.default_down_after,
            failover_timeout=self.timings.default_failover_timeout,
            quorum=quorum,
            role_reported=flags & (MASTER | SLAVE),
            role_reported_time=now,
            slave_conf_change_time=now,
        )
        table[name] = ri
        return ri

    def _release(self, ri: Instance) -> None:
        """releaseSentinelRedisInstance: with its replicas and sentinels, and its link unless
        another master's sentinel shares it."""
        for child in list(ri.sentinels.values()) + list(ri.slaves.values()):
            self._release(child)
        ri.sentinels = {}
        ri.slaves = {}
        link = ri.link
        link.refcount -= 1
        if link.refcount == 0:
            self._close(link, link.cc)
            self._close(link, link.pc)
        ri.released = True
        if ri.flags & SLAVE and ri.flags & PROMOTED and ri.master is not None:
            ri.master.promoted_slave = None

    def _find_by_addr_and_runid(
        self, instances: Iterable[Instance], host: str | None, port: int, runid: str | None
    ) -> Instance | None:
        """getSentinelRedisInstanceByAddrAndRunID: by address, by run id, or both."""
        if host is not None and (port < 0 or port > 65535 or not self.valid_host(host)):
            return None
        for ri in instances:
            if runid is not None and ri.runid is None:
                continue
            if (runid is None or ri.runid == runid) and (host is None or ri.addr.same(Addr(host, port))):
                return ri
        return None

    def _lookup_slave(self, master: Instance, host: str, port: int) -> Instance | None:
        if port < 0 or port > 65535 or not self.valid_host(host):
            return None
        return master.slaves.get(Addr(host, port).key())

    def _map_command(self, ri: Instance, command: str) -> str:
        """Commands renamed on the monitored nodes (`sentinel rename-command`)."""
        owner = ri.master if ri.master is not None else ri
        for name, renamed in owner.renamed_commands.items():
            if name.lower() == command.lower():
                return renamed
        return command

    # ------------------------------------------------------------------ links

    def _close(self, link: Link, conn: int | None) -> None:
        """instanceLinkCloseConnection."""
        if conn is None:
            return
        if link.cc == conn:
            link.cc = None
            link.pending_commands = 0
        if link.pc == conn:
            link.pc = None
        link.disconnected = True
        self._forget_conn(conn)
        self._out.append(Close(conn))

    def _forget_conn(self, conn: int) -> None:
        self._conns.pop(conn, None)
        for request in [r for r, req in self._requests.items() if req.conn == conn]:
            del self._requests[request]

    def _connection_error(self, conn: int) -> None:
        """The shell lost connection `conn` (instanceLinkConnectionError): the link will be
        reconnected by the timer; replies still owed on it never come."""
        entry = self._conns.get(conn)
        if entry is None:
            return
        link = entry.link
        if link.pc == conn:
            link.pc = None
        if link.cc == conn:
            link.cc = None
        link.disconnected = True
        self._forget_conn(conn)

    def _new_conn(self, ri: Instance, pubsub: bool) -> int:
        self._next_conn += 1
        conn = self._next_conn
        self._conns[conn] = _Conn(ri.link, pubsub, ri)
        self._out.append(Connect(conn, ri.addr.host, ri.addr.port, pubsub))
        return conn

    def _send(self, ri: Instance, conn: int | None, kind: str, *argv: str, counted: bool = True) -> bool:
        """Queue a command on `conn` (redisAsyncCommand); False if there is no connection."""
        if conn is None:
            return False
        self._next_request += 1
        request = self._next_request
        self._requests[request] = _Request(kind, ri, conn)
        if counted:
            ri.link.pending_commands += 1
        self._out.append(Send(conn, request, (self._map_command(ri, argv[0]), *argv[1:])))
        return True

    def _send_auth(self, ri: Instance, conn: int) -> None:
        """sentinelSendAuthIfNeeded: replies are not checked, a refused AUTH shows as a down
        instance."""
        auth_pass: str | None
        auth_user: str | None
        if ri.flags & SENTINEL:
            if self.sentinel_auth_pass:
                auth_pass, auth_user = self.sentinel_auth_pass, self.sentinel_auth_user
            else:
                auth_pass, auth_user = self.requirepass, None
        else:
            master = ri if ri.flags & MASTER else ri.master
            assert master is not None
            auth_pass, auth_user = master.auth_pass, master.auth_user
        if auth_pass and auth_user is None:
            self._send(ri, conn, _DISCARD, "AUTH", auth_pass)
        elif auth_pass and auth_user:
            self._send(ri, conn, _DISCARD, "AUTH", auth_user, auth_pass)

    def _reconnect(self, ri: Instance) -> None:
        """sentinelReconnectInstance: at most once per PING period, open whichever of the
        two connections is missing (Pub/Sub only for masters and replicas)."""
        link = ri.link
        if not link.disconnected or ri.addr.port == 0:
            return
        if self.now - link.last_reconn_time < self.timings.ping_period:
            return
        link.last_reconn_time = self.now
        if link.cc is None:
            conn = self._new_conn(ri, pubsub=False)
            link.cc = conn
            link.pending_commands = 0
            link.cc_conn_time = self.now
            link.local_ip = None
            self._send_auth(ri, conn)
            self._send(ri, conn, _DISCARD, "CLIENT", "SETNAME", f"sentinel-{self.myid[:8]}-cmd")
            self._send_ping(ri)
        if ri.flags & (MASTER | SLAVE) and link.pc is None:
            conn = self._new_conn(ri, pubsub=True)
            link.pc = conn
            link.pc_conn_time = self.now
            self._send_auth(ri, conn)
            self._send(ri, conn, _DISCARD, "CLIENT", "SETNAME", f"sentinel-{self.myid[:8]}-pubsub")
            self._send(ri, conn, _SUBSCRIBE, "SUBSCRIBE", HELLO_CHANNEL, counted=False)
        if link.cc is not None and (ri.flags & SENTINEL or link.pc is not None):
            link.disconnected = False

    def _try_connection_sharing(self, si: Instance) -> None:
        """Use the link another master already has to the same sentinel (by run id)."""
        if si.runid is None or si.link.refcount > 1:
            return
        for master in self.masters.values():
            if master is si.master:
                continue
            match = self._find_by_addr_and_runid(master.sentinels.values(), None, 0, si.runid)
            if match is None or match is si:
                continue
            old = si.link
            old.refcount -= 1
            if old.refcount == 0:
                self._close(old, old.cc)
                self._close(old, old.pc)
            si.link = match.link
            match.link.refcount += 1
            return

    def _update_sentinel_address_in_all_masters(self, ri: Instance) -> None:
        reconfigured = 0
        for master in self.masters.values():
            match = self._find_by_addr_and_runid(master.sentinels.values(), None, 0, ri.runid)
            if match is None:
                continue
            self._close(match.link, match.link.cc)
            self._close(match.link, match.link.pc)
            if match is ri:
                continue
            match.addr = ri.addr
            reconfigured += 1
        if reconfigured:
            self._event(NOTICE, "+sentinel-address-update", ri, f" {reconfigured} additional matching instances")

    # ------------------------------------------------------------------ replies

    def _on_reply(self, conn: int, request: int, value: Value) -> None:
        req = self._requests.pop(request, None)
        entry = self._conns.get(conn)
        if req is None or entry is None or req.conn != conn:
            return
        link = entry.link
        ri = req.instance
        if req.kind == _SUBSCRIBE:
            link.pc_last_activity = self.now
            return
        link.pending_commands -= 1
        if ri.released:
            return
        if req.kind == _PING:
            self._on_ping_reply(ri, value)
        elif req.kind == _INFO:
            if isinstance(value, bytes):
                self._refresh_info(ri, value.decode("latin-1"))
        elif req.kind == _PUBLISH:
            if not isinstance(value, RespError):
                ri.last_pub_time = self.now
        elif req.kind == _IS_MASTER_DOWN:
            self._on_is_master_down_reply(ri, value)
        elif req.kind == _FENCE:
            self._on_fence_reply(ri, value)

    def _on_ping_reply(self, ri: Instance, value: Value) -> None:
        link = ri.link
        text = value if isinstance(value, str) else value.text if isinstance(value, RespError) else None
        if text is not None:
            if text.startswith(("PONG", "LOADING", "MASTERDOWN")):
                link.last_avail_time = self.now
                link.act_ping_time = 0
                if ri.flags & MASTER_REBOOT and text.startswith("PONG"):
                    ri.flags &= ~MASTER_REBOOT
            elif text.startswith("BUSY") and ri.flags & S_DOWN and not ri.flags & SCRIPT_KILL_SENT:
                # A script is keeping the instance busy: kill it (once per SDOWN period).
                self._send(ri, link.cc, _DISCARD, "SCRIPT", "KILL")
                ri.flags |= SCRIPT_KILL_SENT
        link.last_pong_time = self.now

    def _on_is_master_down_reply(self, ri: Instance, value: Value) -> None:
        if not (
            isinstance(value, list)
            and len(value) == 3
            and isinstance(value[0], int)
            and isinstance(value[1], bytes)
            and isinstance(value[2], int)
        ):
            return  # an error or an unexpected reply: the answer just ages out
        ri.last_master_down_reply_time = self.now
        if value[0] == 1:
            ri.flags |= MASTER_DOWN
        else:
            ri.flags &= ~MASTER_DOWN
        leader = value[1].decode("latin-1")
        if leader != "*":
            if ri.leader_epoch != value[2]:
                self._log(NOTICE, f"{ri.name} voted for {leader} {value[2]}")
            ri.leader = leader
            ri.leader_epoch = value[2]

    def _on_message(self, conn: int, payload: bytes) -> None:
        """A message on a node's `__sentinel__:hello` subscription."""
        entry = self._conns.get(conn)
        if entry is None or not entry.pubsub or entry.instance.released:
            return
        entry.link.pc_last_activity = self.now
        text = payload.decode("latin-1")
        if self.myid in text:
            return  # our own hello
        self._process_hello(text)

    # ------------------------------------------------------------------ INFO

    def _refresh_info(self, ri: Instance, text: str) -> None:
        """sentinelRefreshInstanceInfo: learn from an INFO reply, then act on it."""
        now = self.now
        ri.info = text
        ri.master_link_down_time = 0
        report = parse_info(text, is_master=bool(ri.flags & MASTER))
        if report.run_id is not None:
            if ri.runid is None:
                ri.runid = report.run_id
            elif ri.runid != report.run_id:
                self._event(NOTICE, "+reboot", ri, "")
                if ri.flags & MASTER and ri.master_reboot_down_after_period != 0:
                    ri.flags |= MASTER_REBOOT
                    ri.master_reboot_since_time = now
                ri.runid = report.run_id
        for host, port in report.replicas:
            if self._lookup_slave(ri, host, port) is None:
                try:
                    slave = self._create(None, SLAVE, host, port, ri.quorum, ri)
                except SentinelError:
                    continue
                self._event(NOTICE, "+slave", slave, "")
                self._flush()
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

        # The acting half.
        if role != ri.role_reported:
            ri.role_reported_time = now
            ri.role_reported = role
            if role == SLAVE:
                ri.slave_conf_change_time = now
            coherent = (ri.flags & (MASTER | SLAVE)) == role
            self._event(
                VERBOSE,
                "+role-change" if coherent else "-role-change",
                ri,
                f" new reported role is {'master' if role == MASTER else 'slave'}",
            )
        if self.tilt:
            return
        master = ri.master
        if ri.flags & MASTER and role == MASTER and ri.failover_state == FAILOVER_WAIT_RETENURE:
            if report.epoch == ri.failover_epoch and report.leads_epoch:
                self._end_retenure(ri)
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
                self._flush()
                self._event(WARNING, "+promoted-slave", ri, "")
                if self.simfailure_flags & SIMFAILURE_CRASH_AFTER_PROMOTION:
                    self._crash()
                    return
                self._event(WARNING, "+failover-state-reconf-slaves", master, "")
                self._client_reconf_script(master, "leader", master.addr, ri.addr)
                self._force_hello_update(master)
            else:
                # A replica turned master behind our back (a returning old master): force our
                # view, after giving a failover leader time to announce a newer one.
                wait_time = self.timings.publish_period * 4
                if (
                    not ri.flags & PROMOTED
                    and self._master_looks_sane(master)
                    and ri.no_down_for(now, wait_time)
                    and now - ri.role_reported_time > wait_time
                ):
                    if self._send_slaveof(ri, master.addr):
                        self._event(NOTICE, "+convert-to-slave", ri, "")
        if ri.flags & SLAVE and role == SLAVE:
            assert master is not None
            reported = ri.slave_master_host
            if ri.slave_master_port != master.addr.port or reported is None or not master.addr.is_host(reported):
                wait_time = master.failover_timeout
                if (
                    self._master_looks_sane(master)
                    and ri.no_down_for(now, wait_time)
                    and now - ri.slave_conf_change_time > wait_time
                ):
                    if self._send_slaveof(ri, master.addr):
                        self._event(NOTICE, "+fix-slave-config", ri, "")
            promoted = master.promoted_slave
            if ri.flags & RECONF_SENT and reported and promoted is not None:
                if promoted.addr.is_host(reported) and ri.slave_master_port == promoted.addr.port:
                    ri.flags = (ri.flags & ~RECONF_SENT) | RECONF_INPROG
                    self._event(NOTICE, "+slave-reconf-inprog", ri, "")
            if ri.flags & RECONF_INPROG and ri.slave_master_link_up:
                ri.flags = (ri.flags & ~RECONF_INPROG) | RECONF_DONE
                self._event(NOTICE, "+slave-reconf-done", ri, "")

    def _master_looks_sane(self, master: Instance) -> bool:
        return (
            bool(master.flags & MASTER)
            and master.role_reported == MASTER
            and not master.flags & (S_DOWN | O_DOWN)
            and self.now - master.info_refresh < self.timings.info_period * 2
        )

    # ------------------------------------------------------------------ hello

    def _send_hello(self, ri: Instance) -> bool:
        master = ri if ri.flags & MASTER else ri.master
        assert master is not None
        if ri.link.disconnected:
            return False
        ip = self.announce_ip or ri.link.local_ip
        if ip is None:
            return False
        address = master.current_address()
        hello = Hello(
            ip,
            self.announce_port or self.port,
            self.myid,
            self.current_epoch,
            master.name,
            address.host,
            address.port,
            master.config_epoch,
        )
        return self._send(ri, ri.link.cc, _PUBLISH, "PUBLISH", HELLO_CHANNEL, hello.payload())

    def _force_hello_update(self, master: Instance) -> None:
        """Make the next timer run publish a hello everywhere (after a config change)."""
        step = self.timings.publish_period + 1
        for ri in [master, *master.sentinels.values(), *master.slaves.values()]:
            if ri.last_pub_time >= step:
                ri.last_pub_time -= step

    def _process_hello(self, payload: str) -> None:
        """sentinelProcessHelloMessage: discover the sender, adopt a newer epoch and a newer
        master configuration."""
        hello = parse_hello(payload)
        if hello is None:
            return
        master = self.masters.get(hello.master_name)
        if master is None:
            return
        si = self._find_by_addr_and_runid(master.sentinels.values(), hello.ip, hello.port, hello.runid)
        if si is None:
            # A sentinel we know under another address changed address: forget the old entry.
            removed = self._remove_matching_sentinel(master, hello.runid)
            if removed:
                self._event(
                    NOTICE, "+sentinel-address-switch", master, f" ip {hello.ip} port {hello.port} for {hello.runid}"
                )
            else:
                other = self._find_by_addr_and_runid(master.sentinels.values(), hello.ip, hello.port, None)
                if other is not None:
                    # Another sentinel claims this address: the old one is gone everywhere.
                    self._event(NOTICE, "+sentinel-invalid-addr", other, "")
                    obsolete = other.runid
                    for m in list(self.masters.values()):
                        if obsolete is not None:
                            self._remove_matching_sentinel(m, obsolete)
            try:
                si = self._create(hello.runid, SENTINEL, hello.ip, hello.port, master.quorum, master)
            except SentinelError:
                si = None
            if si is not None:
                if not removed:
                    self._event(NOTICE, "+sentinel", si, "")
                si.runid = hello.runid
                self._try_connection_sharing(si)
                if removed:
                    self._update_sentinel_address_in_all_masters(si)
                self._flush()
        if hello.current_epoch > self.current_epoch:
            self.current_epoch = hello.current_epoch
            self._flush()
            self._event(WARNING, "+new-epoch", master, str(self.current_epoch), describe=False)
        if si is not None and master.config_epoch < hello.master_config_epoch:
            master.config_epoch = hello.master_config_epoch
            if hello.master_port != master.addr.port or not master.addr.is_host(hello.master_ip):
                self._event(WARNING, "+config-update-from", si, "")
                self._event(
                    WARNING,
                    "+switch-master",
                    master,
                    f"{master.name} {master.addr.host} {master.addr.port} {hello.master_ip} {hello.master_port}",
                    describe=False,
                )
                old = master.addr
                if self._reset_master_and_change_address(master, hello.master_ip, hello.master_port):
                    self._client_reconf_script(master, "observer", old, master.addr)
        if si is not None:
            si.last_hello_time = self.now

    def _remove_matching_sentinel(self, master: Instance, runid: str) -> int:
        removed = 0
        for name, ri in list(master.sentinels.items()):
            if ri.runid == runid:
                del master.sentinels[name]
                self._release(ri)
                removed += 1
        return removed

    # ------------------------------------------------------------------ master reset

    def _reset_master(self, master: Instance, *, keep_sentinels: bool, announce: bool) -> None:
        """sentinelResetMaster: forget replicas (and sentinels), runtime flags and any
        failover, and reconnect."""
        for slave in list(master.slaves.values()):
            self._release(slave)
        master.slaves = {}
        if not keep_sentinels:
            for si in list(master.sentinels.values()):
                self._release(si)
            master.sentinels = {}
        link = master.link
        self._close(link, link.cc)
        self._close(link, link.pc)
        master.flags &= MASTER
        master.leader = None
        master.failover_state = FAILOVER_NONE
        master.failover_state_change_time = 0
        master.failover_start_time = 0  # a new failover may start at once
        master.promoted_slave = None
        self._forget_fencing(master)
        master.stranded_since = 0
        master.stranded_epochs = None
        master.runid = None
        master.node_id = None
        master.fenced_settings = None
        master.fence_epoch = master.node_epoch = master.leads_epoch = None
        master.slave_master_host = None
        link.act_ping_time = self.now
        link.last_ping_time = 0
        link.last_avail_time = self.now
        link.last_pong_time = self.now
        master.role_reported_time = self.now
        master.role_reported = MASTER
        if announce:
            self._event(WARNING, "+reset-master", master, "")

    def _reset_master_and_change_address(self, master: Instance, host: str, port: int) -> bool:
        """Switch a master to a new address (+switch-master): the old address and the other
        replicas become its replicas, so the old master can be found and reconfigured."""
        if port < 0 or port > 65535 or not self.valid_host(host):
            return False
        new = Addr(host, port)
        replicas = [s.addr for s in master.slaves.values() if not s.addr.same(new)]
        if not new.same(master.addr):
            replicas.append(master.addr)
        self._reset_master(master, keep_sentinels=True, announce=False)
        master.addr = new
        master.o_down_since_time = 0
        master.s_down_since_time = 0
        for addr in replicas:
            try:
                slave = self._create(None, SLAVE, addr.host, addr.port, master.quorum, master)
            except SentinelError:
                continue
            self._event(NOTICE, "+slave", slave, "")
        self._flush()
        return True

    # ------------------------------------------------------------------ the timer

    def _timer(self, wall: int) -> None:
        """sentinelTimer: TILT check, then every master with its replicas and sentinels.

        Redis enters TILT when mstime() between two timer runs went back or forward by more
        than TILT-TRIGGER: the process was stopped or starved (its view of the instances is
        stale), or the wall clock stepped (its timers, all on that clock, are wrong). Here the
        timers run on the monotonic clock, so the first shows as a late run of the timer and
        the second as a wall-clock jump; either enters TILT, as in Redis (a step harms no
        timer any more, but it still means this machine's time is not to be trusted)."""
        late = self.now - self.previous_time
        jumped = 0 if self.previous_wall is None else wall - self.previous_wall
        trigger = self.timings.tilt_trigger
        if late < 0 or late > trigger or jumped < 0 or jumped > trigger:
            self.tilt = True
            self.tilt_start_time = self.now
            self._event(WARNING, "+tilt", None, "#tilt mode entered")
        self.previous_time = self.now
        self.previous_wall = wall
        self.wall_offset = wall - self.now
        self._handle_instances(list(self.masters.values()))

    def _handle_instances(self, instances: list[Instance]) -> None:
        switch_to_promoted = None
        for ri in instances:
            if ri.released:
                continue
            self._handle_instance(ri)
            if ri.flags & MASTER:
                self._handle_instances(list(ri.slaves.values()))
                self._handle_instances(list(ri.sentinels.values()))
                if ri.failover_state == FAILOVER_UPDATE_CONFIG:
                    switch_to_promoted = ri
        if switch_to_promoted is not None:
            self._switch_to_promoted(switch_to_promoted)

    def _handle_instance(self, ri: Instance) -> None:
        self._reconnect(ri)
        self._send_periodic(ri)
        if self.tilt:
            if self.now - self.tilt_start_time < self.timings.tilt_period:
                return
            self.tilt = False
            self._event(WARNING, "-tilt", None, "#tilt mode exited")
        self._check_sdown(ri)
        if ri.flags & MASTER:
            self._check_odown(ri)
            if self._start_failover_if_needed(ri) or self._start_retenure_if_needed(ri):
                self._ask_others(ri, forced=True)
            self._failover_state_machine(ri)
            self._ask_others(ri, forced=False)

    def _send_periodic(self, ri: Instance) -> None:
        link = ri.link
        if link.disconnected:
            return
        # INFO, PING and PUBLISH are not critical: do not pile them up on a link that does
        # not answer.
        if link.pending_commands >= MAX_PENDING_COMMANDS * link.refcount:
            return
        master = ri.master
        if ri.flags & SLAVE and master is not None and (
            master.flags & (O_DOWN | FAILOVER_IN_PROGRESS) or ri.master_link_down_time != 0
        ):
            info_period = 1000  # watch replicas closely while they may be promoted
        elif ri.flags & MASTER and (ri.retenure or ri.stranded_since):
            # Stranded replicas are judged against the master's epoch as it is now, and a
            # re-tenure ends when the master's INFO shows the new one.
            info_period = 1000
        else:
            info_period = self.timings.info_period
        ping_period = min(ri.down_after_period, self.timings.ping_period)
        now = self.now
        if not ri.flags & SENTINEL and (ri.info_refresh == 0 or now - ri.info_refresh > info_period):
            self._send(ri, link.cc, _INFO, "INFO")
        if now - link.last_pong_time > ping_period and now - link.last_ping_time > ping_period // 2:
            self._send_ping(ri)
        if now - ri.last_pub_time > self.timings.publish_period:
            self._send_hello(ri)

    def _send_ping(self, ri: Instance) -> bool:
        link = ri.link
        if not self._send(ri, link.cc, _PING, "PING"):
            return False
        link.last_ping_time = self.now
        # A PING still unanswered keeps the time it was sent: SDOWN counts from the first.
        if link.act_ping_time == 0:
            link.act_ping_time = self.now
        return True

    # ------------------------------------------------------------------ availability

    def _check_sdown(self, ri: Instance) -> None:
        link = ri.link
        now = self.now
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
            and now - link.cc_conn_time > self.timings.min_link_reconnect_period
            and link.act_ping_time != 0
            and now - link.act_ping_time > half_down
            and now - link.last_pong_time > half_down
        ):
            self._close(link, link.cc)
        if (
            link.pc is not None
            and now - link.pc_conn_time > self.timings.min_link_reconnect_period
            and now - link.pc_last_activity > self.timings.publish_period * 3
        ):
            self._close(link, link.pc)
        down = (
            elapsed > ri.down_after_period
            or (
                ri.flags & MASTER
                and ri.role_reported == SLAVE
                and now - ri.role_reported_time > ri.down_after_period + self.timings.info_period * 2
            )
            or (ri.flags & MASTER_REBOOT and now - ri.master_reboot_since_time > ri.master_reboot_down_after_period)
        )
        if down:
            if not ri.flags & S_DOWN:
                self._event(WARNING, "+sdown", ri, "")
                ri.s_down_since_time = now
                ri.flags |= S_DOWN
        elif ri.flags & S_DOWN:
            self._event(WARNING, "-sdown", ri, "")
            ri.flags &= ~(S_DOWN | SCRIPT_KILL_SENT)

    def _check_odown(self, master: Instance) -> None:
        """ODOWN is a weak quorum: enough sentinels said "down" within the last 5 s."""
        quorum = 0
        odown = False
        if master.flags & S_DOWN:
            quorum = 1 + sum(1 for si in master.sentinels.values() if si.flags & MASTER_DOWN)
            odown = quorum >= master.quorum
        if odown:
            if not master.flags & O_DOWN:
                self._event(WARNING, "+odown", master, f" #quorum {quorum}/{master.quorum}")
                master.flags |= O_DOWN
                master.o_down_since_time = self.now
        elif master.flags & O_DOWN:
            self._event(WARNING, "-odown", master, "")
            master.flags &= ~O_DOWN

    def _ask_others(self, master: Instance, *, forced: bool) -> None:
        """Ask every connected sentinel whether our SDOWN master is down (and, once we are
        failing over, for its vote)."""
        for si in master.sentinels.values():
            if self.now - si.last_master_down_reply_time > self.timings.ask_period * 5:
                si.flags &= ~MASTER_DOWN
                si.leader = None
            # A re-tenure asks for votes for a master that is not down (the answer says so).
            if not (master.flags & S_DOWN or master.retenure) or si.link.disconnected:
                continue
            if not forced and self.now - si.last_master_down_reply_time < self.timings.ask_period:
                continue
            self._send(
                si,
                si.link.cc,
                _IS_MASTER_DOWN,
                "SENTINEL",
                "is-master-down-by-addr",
                master.addr.host,
                str(master.addr.port),
                # Votes are asked for the failover's own epoch (Redis asks in its current
                # epoch, which may have moved on: see _get_leader).
                str(master.failover_epoch if master.failover_state > FAILOVER_NONE else self.current_epoch),
                self.myid if master.failover_state > FAILOVER_NONE else "*",
            )

    # ------------------------------------------------------------------ election

    def _vote(self, master: Instance, req_epoch: int, req_runid: str) -> tuple[str | None, int]:
        """sentinelVoteLeader: vote for `req_runid` unless we voted in this epoch or a later
        one; either way return our vote and its epoch. The vote is flushed to disk before the
        shell answers (the FlushConfig precedes the reply)."""
        if req_epoch > self.current_epoch:
            self.current_epoch = req_epoch
            self._flush()
            self._event(WARNING, "+new-epoch", master, str(self.current_epoch), describe=False)
        if master.leader_epoch < req_epoch and self.current_epoch <= req_epoch:
            master.leader = req_runid
            master.leader_epoch = self.current_epoch
            self._flush()
            self._event(WARNING, "+vote-for-leader", master, f"{master.leader} {master.leader_epoch}", describe=False)
            # Having voted for someone else, do not start our own failover right away.
            if req_runid.lower() != self.myid.lower():
                master.failover_start_time = self.now + self.rng.randrange(MAX_DESYNC)
        return master.leader, master.leader_epoch

    def _get_leader(self, master: Instance, epoch: int) -> str | None:
        """sentinelGetLeader: the winner of `epoch` if there is one; casts our vote (for the
        most voted sentinel so far, or ourselves) if we have not voted yet.

        Only votes cast in `epoch` count. Redis counts those of its current epoch, which a
        hello or another candidate's request may have raised meanwhile: a candidate still
        waiting in epoch e can then win with votes of epoch e+1 while another sentinel
        legitimately won e, and both promote a replica under config epoch e — two leaders of
        one epoch (redis/redis#2230, #11571, still open). Counting the failover's own epoch,
        and asking in it, keeps one leader per epoch, which fenced mode relies on."""
        voters = len(master.sentinels) + 1
        counts = election.tally(master.sentinels.values(), epoch)
        winner = election.most_voted(counts)
        max_votes = counts[winner] if winner is not None else 0
        myvote, leader_epoch = self._vote(master, epoch, winner if winner is not None else self.myid)
        if myvote is not None and leader_epoch == epoch:
            votes = counts[myvote] = counts.get(myvote, 0) + 1
            if votes > max_votes:
                max_votes = votes
                winner = myvote
        if winner is not None and not election.wins(max_votes, voters, master.quorum):
            winner = None
        return winner

    # ------------------------------------------------------------------ failover

    def _start_failover(self, master: Instance, *, retenure: bool = False) -> None:
        master.failover_state = FAILOVER_WAIT_START
        master.flags |= FAILOVER_IN_PROGRESS
        master.retenure = retenure
        self.current_epoch += 1
        master.failover_epoch = self.current_epoch
        self._event(WARNING, "+new-epoch", master, str(self.current_epoch), describe=False)
        self._event(WARNING, "+try-fenced-retenure" if retenure else "+try-failover", master, "")
        master.failover_start_time = self.now + self.rng.randrange(MAX_DESYNC)
        master.failover_state_change_time = self.now

    def _start_failover_if_needed(self, master: Instance) -> bool:
        if not master.flags & O_DOWN or master.flags & FAILOVER_IN_PROGRESS:
            return False
        if self.now - master.failover_start_time < master.failover_timeout * 2:
            if master.failover_delay_logged != master.failover_start_time:
                master.failover_delay_logged = master.failover_start_time
                when = (master.failover_start_time + master.failover_timeout * 2 + self.wall_offset) // 1000
                stamp = datetime.fromtimestamp(when, tz=UTC).strftime("%a %b %d %H:%M:%S %Y")
                self._log(NOTICE, f"Next failover delay: I will not start a failover before {stamp}")
            return False
        self._start_failover(master)
        return True

    def _failover_state_machine(self, master: Instance) -> None:
        if not master.flags & FAILOVER_IN_PROGRESS:
            return
        state = master.failover_state
        if state == FAILOVER_WAIT_START:
            self._failover_wait_start(master)
        elif state == FAILOVER_FENCE:
            self._failover_fence(master)
        elif state == FAILOVER_WAIT_LEASE:
            self._failover_wait_lease(master)
        elif state == FAILOVER_SELECT_SLAVE:
            self._failover_select_slave(master)
        elif state == FAILOVER_SEND_SLAVEOF_NOONE:
            self._failover_send_slaveof_noone(master)
        elif state == FAILOVER_WAIT_PROMOTION:
            self._failover_wait_promotion(master)
        elif state == FAILOVER_WAIT_RETENURE:
            self._failover_wait_retenure(master)
        elif state == FAILOVER_RECONF_SLAVES:
            self._failover_reconf_next_slave(master)

    def _set_state(self, master: Instance, state: int) -> None:
        master.failover_state = state
        master.failover_state_change_time = self.now

    def _failover_wait_start(self, master: Instance) -> None:
        leader = self._get_leader(master, master.failover_epoch)
        is_leader = leader is not None and leader.lower() == self.myid.lower()
        if not is_leader and not master.flags & FORCE_FAILOVER:
            election_timeout = min(self.timings.election_timeout, master.failover_timeout)
            if self.now - master.failover_start_time > election_timeout:
                self._event(WARNING, "-failover-abort-not-elected", master, "")
                self._abort_failover(master)
            return
        self._event(WARNING, "+elected-leader", master, "")
        if self.simfailure_flags & SIMFAILURE_CRASH_AFTER_ELECTION:
            self._crash()
            return
        if master.fenced:
            if self._fenced_view_disagrees(master):
                return
            self._set_state(master, FAILOVER_FENCE)
            self._event(WARNING, "+failover-state-fence", master, "")
            self._failover_fence(master)
            return
        self._set_state(master, FAILOVER_SELECT_SLAVE)
        self._event(WARNING, "+failover-state-select-slave", master, "")

    def _failover_select_slave(self, master: Instance) -> None:
        slave = self._select(master)
        if slave is master:
            self._retenure_master(master)
            return
        if slave is None:
            self._event(WARNING, "-failover-abort-no-good-slave", master, "")
            self._abort_failover(master)
            return
        self._event(WARNING, "+selected-slave", slave, "")
        slave.flags |= PROMOTED
        master.promoted_slave = slave
        self._set_state(master, FAILOVER_SEND_SLAVEOF_NOONE)
        self._event(NOTICE, "+failover-state-send-slaveof-noone", slave, "")

    def _select(self, master: Instance) -> Instance | None:
        if master.fenced and master.failover_state == FAILOVER_SELECT_SLAVE:
            return fenced.select_fenced(master)
        return selection.select_replica(master, self.now, self.timings)

    def _failover_send_slaveof_noone(self, master: Instance) -> None:
        promoted = master.promoted_slave
        assert promoted is not None
        if promoted.link.disconnected:
            if self.now - master.failover_state_change_time > master.failover_timeout:
                self._event(WARNING, "-failover-abort-slave-timeout", master, "")
                self._abort_failover(master)
            return
        # The reply is not checked: INFO will show whether the replica became a master (a
        # fenced node refuses if its log is no longer at the position its FENCE reply showed).
        reply = promoted.fence_reply if master.fenced else None
        position = None if reply is None else (reply.log_epoch, reply.offset)
        if not self._send_slaveof(promoted, None, epoch=master.failover_epoch if master.fenced else None,
                                  position=position):
            return
        self._event(NOTICE, "+failover-state-wait-promotion", promoted, "")
        self._set_state(master, FAILOVER_WAIT_PROMOTION)

    def _failover_wait_promotion(self, master: Instance) -> None:
        if self.now - master.failover_state_change_time > master.failover_timeout:
            self._event(WARNING, "-failover-abort-slave-timeout", master, "")
            self._abort_failover(master)

    def _failover_detect_end(self, master: Instance) -> None:
        promoted = master.promoted_slave
        # Not finished while the promoted replica is unreachable: not even failover-timeout
        # ends it then (a newer configuration from another sentinel may).
        if promoted is None or promoted.flags & S_DOWN:
            return
        not_reconfigured = sum(
            1 for s in master.slaves.values() if not s.flags & (PROMOTED | RECONF_DONE) and not s.flags & S_DOWN
        )
        timeout = False
        if self.now - master.failover_state_change_time > master.failover_timeout:
            not_reconfigured = 0
            timeout = True
            self._event(WARNING, "+failover-end-for-timeout", master, "")
        if not_reconfigured == 0:
            self._event(WARNING, "+failover-end", master, "")
            self._set_state(master, FAILOVER_UPDATE_CONFIG)
        if timeout:
            # Best effort: point the replicas we did not get to at the new master.
            for slave in master.slaves.values():
                if slave.flags & (PROMOTED | RECONF_DONE | RECONF_SENT) or slave.link.disconnected:
                    continue
                if self._send_slaveof(slave, promoted.addr):
                    self._event(NOTICE, "+slave-reconf-sent-be", slave, "")
                    slave.flags |= RECONF_SENT

    def _failover_reconf_next_slave(self, master: Instance) -> None:
        promoted = master.promoted_slave
        assert promoted is not None
        in_progress = sum(1 for s in master.slaves.values() if s.flags & (RECONF_SENT | RECONF_INPROG))
        for slave in list(master.slaves.values()):
            if in_progress >= master.parallel_syncs:
                break
            if slave.flags & (PROMOTED | RECONF_DONE):
                continue
            # A replica that does not move on is taken as done: the sentinels fix its
            # configuration later (+fix-slave-config).
            if slave.flags & RECONF_SENT and self.now - slave.slave_reconf_sent_time > self.timings.slave_reconf_timeout:
                self._event(NOTICE, "-slave-reconf-sent-timeout", slave, "")
                slave.flags = (slave.flags & ~RECONF_SENT) | RECONF_DONE
            if slave.flags & (RECONF_SENT | RECONF_INPROG) or slave.link.disconnected:
                continue
            if self._send_slaveof(slave, promoted.addr):
                slave.flags |= RECONF_SENT
                slave.slave_reconf_sent_time = self.now
                self._event(NOTICE, "+slave-reconf-sent", slave, "")
                in_progress += 1
        self._failover_detect_end(master)

    def _switch_to_promoted(self, master: Instance) -> None:
        ref = master.promoted_slave if master.promoted_slave is not None else master
        self._event(
            WARNING,
            "+switch-master",
            master,
            f"{master.name} {master.addr.host} {master.addr.port} {ref.addr.host} {ref.addr.port}",
            describe=False,
        )
        self._reset_master_and_change_address(master, ref.addr.host, ref.addr.port)

    def _abort_failover(self, master: Instance) -> None:
        """Only before the promoted replica accepted its role; afterwards a failover runs to
        its end (possibly by timeout)."""
        assert master.flags & FAILOVER_IN_PROGRESS and master.failover_state in (
            *range(FAILOVER_WAIT_PROMOTION + 1), FAILOVER_WAIT_RETENURE)
        master.flags &= ~(FAILOVER_IN_PROGRESS | FORCE_FAILOVER)
        self._set_state(master, FAILOVER_NONE)
        self._forget_fencing(master)
        if master.promoted_slave is not None:
            master.promoted_slave.flags &= ~PROMOTED
            master.promoted_slave = None

    def _send_slaveof(self, ri: Instance, addr: Addr | None, *, epoch: int | None = None,
                      position: tuple[int, int] | None = None, kill_clients: bool = True) -> bool:
        """The reconfiguration block: SLAVEOF, CONFIG REWRITE (persist it when the node has a
        config file) and CLIENT KILL of normal and Pub/Sub clients (so they reconnect and ask
        for the master again), in one MULTI/EXEC. Replies are not checked. In fenced mode the
        promotion names its epoch, which the node refuses if it was fenced by a newer one, and
        the position of the node's log the choice relied on, which it refuses if its log is
        elsewhere now."""
        conn = ri.link.cc
        if conn is None:
            return False
        target: tuple[str, ...] = ("NO", "ONE") if addr is None else (addr.host, str(addr.port))
        if epoch is not None:
            target += ("EPOCH", str(epoch))
        if position is not None:
            target += ("POSITION", str(position[0]), str(position[1]))
        self._send(ri, conn, _DISCARD, "MULTI")
        self._send(ri, conn, _DISCARD, "SLAVEOF", *target)
        self._send(ri, conn, _DISCARD, "CONFIG", "REWRITE")
        if kill_clients:
            self._send(ri, conn, _DISCARD, "CLIENT", "KILL", "TYPE", "normal")
            self._send(ri, conn, _DISCARD, "CLIENT", "KILL", "TYPE", "pubsub")
        self._send(ri, conn, _DISCARD, "EXEC")
        return True

    # ------------------------------------------------------------------ fenced mode

    def _fenced_view_disagrees(self, master: Instance) -> bool:
        """Refuse (abort) a fenced failover while this sentinel's view of the replica set
        disagrees with what the nodes report (node/sentinel/fenced.py, `disagreement`)."""
        reason = fenced.disagreement(master)
        if reason is None:
            return False
        self._log(WARNING, f"Fenced mode: not failing over '{master.name}': {reason}")
        self._event(WARNING, "-failover-abort-fenced-mismatch", master, f" {reason}")
        self._abort_failover(master)
        return True

    def _failover_fence(self, master: Instance) -> None:
        """Ask every replica to stop acknowledging primaries older than our epoch and report
        (epoch, offset, node id); move on once a majority of the members did."""
        if self._fenced_view_disagrees(master):
            return
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
                self._send(ri, ri.link.cc, _FENCE, "FENCE", str(epoch))
        count = fenced.fenced_members(master)
        # A re-tenure goes on only with the master fenced: its FENCE reply is the position
        # it is chosen on, and counting it is what lets the replicas it keeps be a minority.
        if count >= majority and (not master.retenure or master.fence_reply is not None):
            master.fence_majority_time = self.now
            self._set_state(master, FAILOVER_WAIT_LEASE)
            self._event(WARNING, "+failover-state-wait-lease", master, f" {count}/{fenced.members(master)}")
            self._failover_wait_lease(master)
        elif self.now - master.failover_state_change_time > master.failover_timeout:
            self._event(WARNING, "-failover-abort-fence-timeout", master, "")
            self._abort_failover(master)

    def _on_fence_reply(self, slave: Instance, value: Value) -> None:
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
        slave.fence_reply = FenceReply(fence_epoch, log_epoch, offset, node_id.decode("latin-1"), self.now)
        self._event(NOTICE, "+fenced", slave, f" {fence_epoch} {log_epoch} {offset}")

    def _failover_wait_lease(self, master: Instance) -> None:
        if self._fenced_view_disagrees(master):
            return
        if self.now - master.fence_majority_time < lease_wait_ms(master.lease_ms, self.drift_permille):
            return
        self._set_state(master, FAILOVER_SELECT_SLAVE)
        self._event(WARNING, "+failover-state-select-slave", master, "")

    def _forget_fencing(self, master: Instance) -> None:
        """A failover or re-tenure is over: its FENCE replies count no more."""
        master.fence_majority_time = 0
        master.retenure = False
        for ri in (master, *master.slaves.values()):
            ri.fence_reply = None
            ri.fence_sent_conn = None

    # ------------------------------------------------------------------ fenced mode: re-tenure
    #
    # A fenced failover that aborts after fencing a minority of the replicas leaves them
    # promised to its epoch: they refuse the master, of an older one (STALEEPOCH), for good,
    # and no failover comes while the master is healthy. A re-tenure is a fenced failover in
    # which the master is a candidate: elected as for a failover, it fences a majority (the
    # master last, counted among them), waits the lease out and selects the fenced node with
    # the highest position, the master on ties. The master chosen is sent SLAVEOF NO ONE EPOCH
    # e POSITION <its FENCE reply's>: it keeps its log and leads e, which the replicas accept.
    # A replica holding more (the master is then not the primary with the newest writes) is
    # promoted as in any failover. Default mode never does this (docs/safety.md).

    def _start_retenure_if_needed(self, master: Instance) -> bool:
        """A healthy fenced master stranded (node/sentinel/fenced.py, `stranded`) with the
        same epochs for longer than a failover under way elsewhere could take to end gets a
        re-tenure, no sooner than a failover would be retried."""
        reason = None
        if master.fenced and not master.flags & FAILOVER_IN_PROGRESS and self._master_looks_sane(master):
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
                self._log(WARNING, f"Fenced mode: '{master.name}' is stranded: {reason}")
                self._event(WARNING, "+fenced-stranded", master, f" {reason}")
            master.stranded_since = self.now
            master.stranded_epochs = epochs
            return False
        settle = 2 * master.failover_timeout + lease_wait_ms(master.lease_ms, self.drift_permille)
        if self.now - master.stranded_since < settle:
            return False
        if self.now - master.failover_start_time < master.failover_timeout * 2:
            return False
        self._log(WARNING, f"Fenced mode: re-tenure of '{master.name}' at a new epoch: {reason}")
        self._start_failover(master, retenure=True)
        return True

    def _retenure_master(self, master: Instance) -> None:
        """The master holds the highest position of the fenced majority: it leads the new
        epoch with its log as it is (no CLIENT KILL: its clients are at the right place)."""
        reply = master.fence_reply
        assert reply is not None
        if not self._send_slaveof(master, None, epoch=master.failover_epoch, position=(reply.log_epoch, reply.offset),
                                  kill_clients=False):
            return  # no connection now: selected again at the next run
        self._event(WARNING, "+fenced-retenure", master, f" epoch {master.failover_epoch} position "
                    f"{reply.log_epoch} {reply.offset}")
        self._set_state(master, FAILOVER_WAIT_RETENURE)

    def _failover_wait_retenure(self, master: Instance) -> None:
        """Refused (the master's log moved since its FENCE reply: it restarted from an older
        AOF) or unanswered: give up at failover-timeout; the next attempt waits twice that."""
        if self.now - master.failover_state_change_time > master.failover_timeout:
            self._event(WARNING, "-failover-abort-retenure-timeout", master, "")
            self._abort_failover(master)

    def _end_retenure(self, master: Instance) -> None:
        """The master's INFO shows it leads the re-tenure's epoch: our configuration gets that
        epoch (it spreads in hellos, ordering it with any failover), the failover is over."""
        master.config_epoch = master.failover_epoch
        master.flags &= ~(FAILOVER_IN_PROGRESS | FORCE_FAILOVER)
        self._set_state(master, FAILOVER_NONE)
        self._forget_fencing(master)
        master.stranded_since = 0
        master.stranded_epochs = None
        self._flush()
        self._event(WARNING, "+fenced-retenure-end", master, f" epoch {master.config_epoch}")
        self._force_hello_update(master)
