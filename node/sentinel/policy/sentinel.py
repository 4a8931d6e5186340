"""`Sentinel`: the one entry the shell drives (`step`), the commands other sentinels and
clients send, and `configure` (options.py), over the policy's parts. Each part has its own
type and module and is built here with what it needs:

    state.State          identity, time, epoch, masters, options (what every part reads)
    outbox.Outbox        the actions handed back to the shell
    connections          the policy's side of its links: connections, requests, commands
    registry             the instances: create, find, release, reset
    discovery            INFO replies and hello gossip
    detection            SDOWN, ODOWN, asking the other sentinels
    voting               the vote per epoch and the leader of an epoch
    fencing, retenure    fenced mode's steps and its re-tenure
    failover             the failover state machine, and acting on INFO

The timer (`Tick`) runs here: TILT, then for every instance reconnect, the periodic INFO,
PING and hello, SDOWN, and for masters ODOWN, the start of a failover and its next step.
"""

from __future__ import annotations

import random

from node.commands.glob import glob_match
from node.sentinel.instance import (
    FAILOVER_IN_PROGRESS,
    FAILOVER_UPDATE_CONFIG,
    FORCE_FAILOVER,
    MASTER,
    O_DOWN,
    S_DOWN,
    SENTINEL,
    SLAVE,
    Instance,
)
from node.sentinel.messages import (
    NOTICE,
    WARNING,
    Action,
    Closed,
    Connected,
    Input,
    Message,
    Reply,
    Tick,
    Value,
)
from node.sentinel.policy import options
from node.sentinel.policy.connections import FENCE, INFO, IS_MASTER_DOWN, PING, PUBLISH, Connections
from node.sentinel.policy.detection import Detection
from node.sentinel.policy.discovery import Discovery
from node.sentinel.policy.failover import Failover
from node.sentinel.policy.fencing import Fencing
from node.sentinel.policy.outbox import Outbox
from node.sentinel.policy.registry import Registry
from node.sentinel.policy.retenure import Retenure
from node.sentinel.policy.state import SentinelError, State
from node.sentinel.policy.transitions import start_failover
from node.sentinel.policy.voting import Voting
from node.sentinel.timings import DEFAULT_PORT, MAX_PENDING_COMMANDS, Timings


class Sentinel(State):
    """One sentinel: its state (a `State`, which every part is built with) and its parts."""

    def __init__(
        self,
        myid: str,
        *,
        now: int,
        rng: random.Random,
        port: int = DEFAULT_PORT,
        timings: Timings | None = None,
        requirepass: str | None = None,
    ) -> None:
        super().__init__(myid, now=now, rng=rng, port=port, timings=timings, requirepass=requirepass)
        self._outbox = Outbox()
        self._links = Connections(self, self._outbox)
        self._registry = Registry(self, self._outbox, self._links)
        self._discovery = Discovery(self, self._outbox, self._links, self._registry)
        self._detection = Detection(self, self._outbox, self._links)
        self._voting = Voting(self, self._outbox)
        self._fencing = Fencing(self, self._outbox, self._links)
        self._retenure = Retenure(self, self._outbox, self._links, self._discovery, self._detection)
        self._failover = Failover(self, self._outbox, self._links, self._registry, self._discovery, self._detection,
                                  self._voting, self._fencing, self._retenure)

    # ------------------------------------------------------------------ the shell's API

    def step(self, msg: Input) -> list[Action]:
        """Apply one observation and return what to do about it."""
        self.now = msg.now
        if isinstance(msg, Tick):
            self._timer(msg.now if msg.wall is None else msg.wall)
        elif isinstance(msg, Reply):
            self._on_reply(msg.conn, msg.request, msg.value)
        elif isinstance(msg, Message):
            if self._links.take_message(msg.conn) is not None:
                self._discovery.on_message(msg.payload)
        elif isinstance(msg, Closed):
            self._links.connection_error(msg.conn)
        elif isinstance(msg, Connected):
            self._links.connected(msg.conn, msg.local_ip)
        return self.take_actions()

    def take_actions(self) -> list[Action]:
        """The actions queued since the last call (commands queue them too)."""
        return self._outbox.take()

    def next_tick_ms(self) -> int:
        """When to tick next: Redis changes its timer frequency to 10-19 Hz at random after
        every run, so sentinels started together do not ask for votes in lockstep."""
        return 1000 // (10 + self.rng.randrange(10))

    def started(self, now: int) -> list[Action]:
        """At start-up: a +monitor event for every configured master (sentinelIsRunning)."""
        self.now = now
        self.previous_time = now
        for master in self.masters.values():
            self._outbox.event(WARNING, "+monitor", master, f" quorum {master.quorum}")
        return self.take_actions()

    def _on_reply(self, conn: int, request: int, value: Value) -> None:
        req = self._links.take_reply(conn, request)
        if req is None:
            return
        ri = req.instance
        if req.kind == PING:
            self._detection.on_ping_reply(ri, value)
        elif req.kind == INFO:
            if isinstance(value, bytes):
                report = self._discovery.refresh_info(ri, value.decode("latin-1"))
                if not self.tilt:
                    self._failover.on_info(ri, report)
        elif req.kind == PUBLISH:
            self._discovery.on_publish_reply(ri, value)
        elif req.kind == IS_MASTER_DOWN:
            self._detection.on_is_master_down_reply(ri, value)
        elif req.kind == FENCE:
            self._fencing.on_fence_reply(ri, value)

    # ------------------------------------------------------------------ commands

    def monitor(self, name: str, host: str, port: int, quorum: int, *, now: int, announce: bool = True) -> Instance:
        """SENTINEL MONITOR (and `sentinel monitor` in the configuration file)."""
        self.now = now
        if quorum <= 0:
            raise SentinelError("Quorum must be 1 or greater.")
        master = self._registry.create(name, MASTER, host, port, quorum, None)
        if announce:
            self._outbox.flush()
            self._outbox.event(WARNING, "+monitor", master, f" quorum {master.quorum}")
        return master

    def add_known_replica(self, master: Instance, host: str, port: int) -> Instance:
        """`sentinel known-replica` from the configuration file."""
        return self._registry.create(None, SLAVE, host, port, master.quorum, master)

    def add_known_sentinel(self, master: Instance, host: str, port: int, runid: str) -> Instance:
        """`sentinel known-sentinel` from the configuration file."""
        si = self._registry.create(runid, SENTINEL, host, port, master.quorum, master)
        si.runid = runid
        self._registry.try_connection_sharing(si)
        return si

    def remove(self, name: str, *, now: int) -> None:
        """SENTINEL REMOVE."""
        self.now = now
        master = self.get_master(name)
        self._outbox.event(WARNING, "-monitor", master, "")
        del self.masters[name]
        self._registry.release(master)
        self._outbox.flush()

    def reset(self, pattern: str, *, now: int) -> int:
        """SENTINEL RESET: forget the replicas, the sentinels and any failover of the masters
        whose names match the glob pattern; returns how many."""
        self.now = now
        count = 0
        for master in list(self.masters.values()):
            if glob_match(pattern.encode(), master.name.encode()):
                self._registry.reset_master(master, keep_sentinels=False, announce=True)
                count += 1
        return count

    def failover(self, name: str, *, now: int) -> None:
        """SENTINEL FAILOVER: fail over now, without agreement from other sentinels."""
        self.now = now
        master = self.get_master(name)
        if master.flags & FAILOVER_IN_PROGRESS:
            raise SentinelError("INPROG Failover already in progress")
        if self._failover.select(master) is None:
            raise SentinelError("NOGOODSLAVE No suitable replica to promote")
        self._outbox.log(NOTICE, f"Executing user requested FAILOVER of '{master.name}'")
        start_failover(self, self._outbox, master)
        master.flags |= FORCE_FAILOVER

    def is_master_down_by_addr(self, ip: str, port: int, req_epoch: int, runid: str, *, now: int) -> list[object]:
        """SENTINEL IS-MASTER-DOWN-BY-ADDR: whether we think that master is down (never while
        in TILT) and, when `runid` is not "*", our vote for the epoch — cast now if we have not
        voted in it yet. The reply is [down 0/1, leader run id or "*", leader epoch]."""
        self.now = now
        master = self._registry.find_by_addr_and_runid(self.masters.values(), ip, port, None)
        isdown = int(not self.tilt and master is not None and bool(master.flags & S_DOWN) and bool(master.flags & MASTER))
        leader: str | None = None
        leader_epoch = 0
        if master is not None and master.flags & MASTER and runid != "*":
            leader, leader_epoch = self._voting.vote(master, req_epoch, runid)
        return [isdown, (leader or "*").encode(), leader_epoch]

    def receive_hello(self, payload: str, *, now: int) -> None:
        """A hello sent to us directly (Sentinel's own PUBLISH on `__sentinel__:hello`)."""
        self.now = now
        self._discovery.process_hello(payload)

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

    def configure(self, master: Instance | None, option: str, value: options.Value) -> None:
        """Set one option of `master` (None: a global one), already validated by the caller
        with its own error texts: SENTINEL SET, SENTINEL CONFIG SET, SENTINEL DEBUG,
        SENTINEL SIMULATE-FAILURE and the configuration file (options.py)."""
        options.configure(self, self._links, master, option, value)

    def event(self, level: int, type_: str, ri: Instance | None, text: str) -> None:
        """A sentinelEvent raised by a command (SENTINEL SET's +set): `text` follows the
        instance's description."""
        self._outbox.event(level, type_, ri, text)

    def flush_config(self) -> None:
        """Queue a configuration rewrite (SENTINEL SET, CONFIG SET, FLUSHCONFIG)."""
        self._outbox.flush()

    def drop_sentinel_connections(self) -> int:
        """sentinelDropConnections: close the links to every connected sentinel."""
        dropped = 0
        for master in self.masters.values():
            for si in master.sentinels.values():
                if not si.link.disconnected:
                    self._links.close(si.link, si.link.pc)
                    self._links.close(si.link, si.link.cc)
                    dropped += 1
        return dropped

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
            self._outbox.event(WARNING, "+tilt", None, "#tilt mode entered")
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
            self._failover.switch_to_promoted(switch_to_promoted)

    def _handle_instance(self, ri: Instance) -> None:
        self._links.reconnect(ri)
        self._send_periodic(ri)
        if self.tilt:
            if self.now - self.tilt_start_time < self.timings.tilt_period:
                return
            self.tilt = False
            self._outbox.event(WARNING, "-tilt", None, "#tilt mode exited")
        self._detection.check_sdown(ri)
        if ri.flags & MASTER:
            self._detection.check_odown(ri)
            if self._failover.start_if_needed(ri) or self._retenure.start_if_needed(ri):
                self._detection.ask_others(ri, forced=True)
            self._failover.run(ri)
            self._detection.ask_others(ri, forced=False)

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
            self._links.send(ri, link.cc, INFO, "INFO")
        if now - link.last_pong_time > ping_period and now - link.last_ping_time > ping_period // 2:
            self._links.send_ping(ri)
        if now - ri.last_pub_time > self.timings.publish_period:
            self._discovery.send_hello(ri)
