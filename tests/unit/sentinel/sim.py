"""A simulated network of sentinels (the real policy) and small models of Redis nodes, driven
by one seeded random generator, maelstrom-style: virtual time, messages with latency,
partitions, paused and killed processes, connection resets, and clocks that drift.

- Network: every connection is a pair of FIFO pipes. A message sent while the path between
  the two processes is cut waits until it heals (TCP retransmits; nothing is reordered); what
  was already on the wire arrives. A process that is paused (SIGSTOP) keeps receiving into
  its socket buffers and handles everything, in order, when it resumes; its timers stop. A
  killed process loses its connections (peers learn it unless the path is cut) and refuses new
  ones until it restarts.
- Sentinels run `node.sentinel.policy.Sentinel`, read their state back from the configuration
  file they rewrote (`node.sentinel.config`) when restarted, and answer the commands other
  sentinels send them (PING, PUBLISH hello, SENTINEL IS-MASTER-DOWN-BY-ADDR).
- Nodes are a model of a Redis primary/replica: a role, the master they follow, a log of writes
  (its length is the replication offset), INFO as Redis formats it, the MULTI/SLAVEOF/CONFIG
  REWRITE/CLIENT KILL block, Pub/Sub for hello messages (PUBLISH reaches subscribers on the
  replicas too). Replication is replica-driven: every period a replica asks its master for the
  log and acknowledges what it got. In fenced mode (docs/safety.md, *Fenced mode*) nodes also keep a
  fence epoch, refuse primaries older than it, answer FENCE, promote only with the epoch they
  were fenced at, and a primary holds a lease from a majority to accept writes and answer WAIT.
- A client writes to whoever the sentinels say is the master and WAITs for a majority.

`Sim.check` is called after every step with the invariant checker (tests/unit/sentinel/
invariants.py).
"""

from __future__ import annotations

import heapq
import random
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from node.sentinel import config
from node.sentinel.instance import FAILOVER_NONE, FAILOVER_SELECT_SLAVE, S_DOWN, Instance
from node.sentinel.messages import (
    Close,
    Closed,
    Connect,
    Connected,
    Event,
    FlushConfig,
    Message,
    Reply,
    RespError,
    Send,
    Tick,
)
from node.sentinel.timings import HELLO_CHANNEL, Timings

NAME = "mymaster"
REPL_PERIOD = 400  # ms between two replication requests of a replica
REPL_TIMEOUT = 60_000  # a replica declares a silent master's link down after this


class Pipe:
    """One direction of a connection: FIFO, held while the path is cut."""

    __slots__ = ("src", "dst", "held", "last_ready")

    def __init__(self, src: Proc, dst: Proc) -> None:
        self.src = src
        self.dst = dst
        self.held: deque[tuple[Callable[..., None], tuple[Any, ...]]] = deque()
        self.last_ready = 0


class Conn:
    """A TCP connection from a client process (sentinel or workload client) to a server."""

    __slots__ = ("client", "cid", "server", "pubsub", "open", "up", "down", "subscribed", "multi", "kind")

    def __init__(self, client: Proc, cid: int, server: Proc, pubsub: bool) -> None:
        self.client = client
        self.cid = cid
        self.server = server
        self.pubsub = pubsub
        self.open = True
        self.up = Pipe(client, server)
        self.down = Pipe(server, client)
        self.subscribed = False
        self.multi: list[tuple[str, ...]] | None = None
        self.kind = "normal"


class Proc:
    """A process: alive or killed, running or paused, with its own clock."""

    def __init__(self, sim: Sim, name: str, host: str, port: int) -> None:
        self.sim = sim
        self.name = name
        self.host = host
        self.port = port
        self.alive = True
        self.paused = False
        self.inbox: deque[tuple[Callable[..., None], tuple[Any, ...]]] = deque()
        self.server_conns: dict[Conn, None] = {}  # ordered, so runs are reproducible
        # Clock: local = offset + rate x real time, the rate within the drift bound.
        drift = sim.clock_drift
        self.rate = 1.0 + sim.rng.uniform(-drift, drift)
        self.clock_offset = sim.rng.randrange(1_000_000, 2_000_000_000)
        # The wall clock: the monotonic one plus an offset that steps (date -s, NTP, a VM's
        # time resync) change.
        self.wall_offset = sim.rng.randrange(1_000_000, 2_000_000_000)

    def local(self) -> int:
        """CLOCK_BOOTTIME: runs at the process's rate, never steps."""
        return int(self.clock_offset + self.sim.now * self.rate)

    def wall(self) -> int:
        return self.local() + self.wall_offset

    def step_wall(self, ms: int) -> None:
        self.wall_offset += ms
        self.sim.wall_steps.append((self.sim.now, self.name, ms))

    def run(self, fn: Callable[..., None], *args: Any) -> None:
        if not self.alive:
            return
        if self.paused:
            self.inbox.append((fn, args))
            return
        fn(*args)

    def resume(self) -> None:
        self.paused = False
        while self.inbox and not self.paused and self.alive:
            fn, args = self.inbox.popleft()
            fn(*args)


# ---------------------------------------------------------------------------- sentinels


class SentinelProc(Proc):
    def __init__(self, sim: Sim, index: int, conf: str, myid: str) -> None:
        super().__init__(sim, f"s{index}", f"10.0.0.{index + 1}", 26379)
        self.index = index
        self._conf = conf
        self._dirty = False
        self.myid = myid
        self.conns: dict[int, Conn] = {}
        self.boot()

    @property
    def conf(self) -> str:
        """The configuration file as the policy last flushed it (rendered when read: only a
        restart reads it, and every change the file records comes with a flush)."""
        if self._dirty:
            self._conf = config.render(self._conf, self.policy, self.options, f"/sim/{self.name}")
            self._dirty = False
        return self._conf

    @conf.setter
    def conf(self, text: str) -> None:
        self._conf = text
        self._dirty = False

    def boot(self) -> None:
        sim = self.sim
        self.policy, self.options = config.load(
            self.conf, now=self.policy_now(), rng=random.Random(sim.rng.getrandbits(32)), timings=sim.timings()
        )
        if not self.policy.myid:
            self.policy.myid = self.myid
        self.flush()
        self.conns = {}
        self.sim.observe(self, self.policy.started(self.policy_now()))
        self.tick_pending = False
        self.gen = getattr(self, "gen", 0) + 1
        self.sim.at(self.sim.now + sim.rng.randrange(1, 100), self.tick, self.gen)

    def policy_now(self) -> int:
        """What the shell gives the policy as its time: CLOCK_BOOTTIME (the runner's
        monotonic clock), or the wall clock in `sentinel_clock="wall"` (how the runner was
        wired before: W can then be cut short by a step)."""
        return self.wall() if self.sim.sentinel_clock == "wall" else self.local()

    def flush(self) -> None:
        self._dirty = True

    def tick(self, gen: int) -> None:
        if not self.alive or gen != self.gen:
            return
        if self.paused:
            self.tick_pending = True
            return
        self.sim.before_tick(self)
        self.apply(self.policy.step(Tick(self.policy_now(), self.wall())))
        self.sim.at(self.sim.now + self.sim.tick_interval(), self.tick, gen)

    def resume(self) -> None:
        super().resume()
        if self.tick_pending and self.alive:
            self.tick_pending = False
            self.tick(self.gen)

    def apply(self, actions: list[Any]) -> None:
        sim = self.sim
        for action in actions:
            if isinstance(action, Send):
                conn = self.conns.get(action.conn)
                if conn is not None:
                    sim.send(conn, conn.up, conn.server.on_command, conn, action.request, action.argv)
            elif isinstance(action, Connect):
                server = sim.by_addr.get((action.host, action.port))
                conn = Conn(self, action.conn, server or self, action.pubsub)
                self.conns[action.conn] = conn
                sim.connect(conn, server)
            elif isinstance(action, Close):
                conn = self.conns.pop(action.conn, None)
                if conn is not None:
                    sim.close(conn)
            elif isinstance(action, FlushConfig):
                self.flush()
        sim.observe(self, actions)

    # client side
    def on_connected(self, conn: Conn) -> None:
        self.apply(self.policy.step(Connected(self.policy_now(), conn.cid, self.host)))

    def on_reply(self, conn: Conn, request: int, value: Any) -> None:
        self.apply(self.policy.step(Reply(self.policy_now(), conn.cid, request, value)))

    def on_message(self, conn: Conn, channel: bytes, payload: bytes) -> None:
        self.apply(self.policy.step(Message(self.policy_now(), conn.cid, channel, payload)))

    def on_closed(self, conn: Conn) -> None:
        self.conns.pop(conn.cid, None)
        self.apply(self.policy.step(Closed(self.policy_now(), conn.cid)))

    # server side: what sentinels send each other
    def on_command(self, conn: Conn, request: int, argv: tuple[str, ...]) -> None:
        name = argv[0].upper()
        value: Any
        if name in ("AUTH", "CLIENT"):
            value = "OK"
        elif name == "PING":
            value = "PONG"
        elif name == "PUBLISH" and argv[1] == HELLO_CHANNEL:
            self.policy.receive_hello(argv[2], now=self.policy_now())
            self.apply(self.policy.take_actions())
            value = 1
        elif name == "SENTINEL" and argv[1].lower() == "is-master-down-by-addr":
            value = self.policy.is_master_down_by_addr(argv[2], int(argv[3]), int(argv[4]), argv[5], now=self.policy_now())
            # The vote is on disk (FlushConfig) before the reply leaves.
            self.apply(self.policy.take_actions())
        else:
            value = RespError(f"ERR unknown command '{argv[0]}'")
        self.sim.send(conn, conn.down, conn.client.on_reply, conn, request, value)

    def view(self) -> Instance:
        return self.policy.masters[NAME]


# ---------------------------------------------------------------------------- nodes


class NodeProc(Proc):
    """A Redis node, reduced to what sentinels observe and what failover changes."""

    def __init__(self, sim: Sim, index: int, master: NodeProc | None) -> None:
        super().__init__(sim, f"n{index}", f"10.0.1.{index + 1}", 6379)
        self.index = index
        self.priority = 100
        # Its durable identity (rill-node-id): the same across restarts, unlike the run id.
        self.node_id = "%040x" % sim.rng.getrandbits(160)
        # Its fenced-replica-set-size and fenced-lease-milliseconds.
        self.set_size = sim.n_nodes
        self.lease_ms = sim.node_lease_ms if sim.node_lease_ms is not None else sim.lease_ms
        self.removed = False  # taken out of the replica set for good
        self.log: list[tuple[int, int | None]] = []  # (epoch, write id); None marks an epoch start
        self.role = "master" if master is None else "slave"
        self.master_addr: tuple[str, int] | None = None if master is None else (master.host, master.port)
        # What CONFIG REWRITE persisted: the role a restart comes back with.
        self.config_master = self.master_addr
        self.fence_epoch = 0
        self.epoch = 0  # a master's tenure; a replica's master's
        # After a full resync the AOF on disk still holds the log replaced (the older AOF a
        # crash restarts from) until the base of the new one is written.
        self.old_log: list[tuple[int, int | None]] | None = None
        self.rewrite_until = 0
        self.boot()

    def boot(self) -> None:
        self.run_id = "%040x" % self.sim.rng.getrandbits(160)
        self.link_up = False
        self.link_down_since = self.sim.now
        self.last_io = self.sim.now
        # replica -> (offset its log file holds, -1: none of its current log; our local time of
        # the request its ack answers: the lease stamp it echoes)
        self.acks: dict[str, tuple[int, int]] = {}
        self.waiters: list[tuple[Conn, int, int, int, int, int]] = []
        self.master_addr = self.config_master
        self.role = "master" if self.master_addr is None else "slave"
        self.epoch = self.log_epoch() if self.role == "master" else 0
        self.gen = getattr(self, "gen", 0) + 1
        self.sim.at(self.sim.now + self.sim.rng.randrange(REPL_PERIOD), self.repl_tick, self.gen)

    def log_epoch(self) -> int:
        return self.log[-1][0] if self.log else 0

    def written(self) -> int:
        """What this node's log file holds of its current log (-1 while the base of a log a
        full resync gave it is not written)."""
        return -1 if self.sim.now < self.rewrite_until else self.offset

    def crash(self) -> None:
        """Killed: a restart loads what the log file holds (the older log while the base of
        the new one was not written yet)."""
        if self.old_log is not None and self.sim.now < self.rewrite_until:
            self.log = self.old_log
        self.old_log = None
        self.rewrite_until = 0

    @property
    def offset(self) -> int:
        return len(self.log)

    # fenced mode
    def majority(self) -> int:
        return self.set_size // 2 + 1

    def stepped_down(self) -> bool:
        return self.sim.fenced and self.fence_epoch > self.epoch

    def lease_valid(self) -> bool:
        if not self.sim.fenced:
            return True
        if self.role != "master" or self.stepped_down():
            return False
        horizon = self.local() - self.lease_ms
        # An echo counts once the replica's log file holds what it had received with it.
        granted = 1 + sum(1 for written, sent in self.acks.values() if sent > horizon and written >= 0)
        return granted >= self.majority()

    # INFO
    def info(self) -> bytes:
        lines = ["# Server", "redis_version:7.2.4", f"run_id:{self.run_id}", "", "# Replication"]
        if self.role == "master":
            replicas = self.sim.followers(self)
            lines.append("role:master")
            lines.append(f"connected_slaves:{len(replicas)}")
            for i, r in enumerate(replicas):
                lines.append(f"slave{i}:ip={r.host},port={r.port},state=online,offset={r.offset},lag=0")
            lines.append(f"master_repl_offset:{self.offset}")
        else:
            assert self.master_addr is not None
            lines += [
                "role:slave",
                f"master_host:{self.master_addr[0]}",
                f"master_port:{self.master_addr[1]}",
                f"master_link_status:{'up' if self.link_up else 'down'}",
                "master_last_io_seconds_ago:0",
                "master_sync_in_progress:0",
                f"slave_read_repl_offset:{self.offset}",
                f"slave_repl_offset:{self.offset}",
            ]
            if not self.link_up:
                lines.append(f"master_link_down_since_seconds:{(self.sim.now - self.link_down_since) // 1000}")
            lines += [
                f"slave_priority:{self.priority}",
                "slave_read_only:1",
                "replica_announced:1",
                "connected_slaves:0",
                f"master_repl_offset:{self.offset}",
            ]
        if self.sim.fenced:
            lines += ["fenced_mode:yes", f"fenced_node_id:{self.node_id}", f"fenced_replica_set_size:{self.set_size}",
                      f"fenced_lease_milliseconds:{self.lease_ms}", f"fence_epoch:{self.fence_epoch}",
                      f"log_epoch:{self.log_epoch()}", f"epoch:{self.epoch}"]
            if self.role == "master":
                lines.append(f"leads_epoch:{int(not self.stepped_down())}")
        return ("\r\n".join(lines) + "\r\n").encode()

    # commands
    def on_command(self, conn: Conn, request: int, argv: tuple[str, ...]) -> None:
        name = argv[0].upper()
        if conn.multi is not None and name not in ("EXEC", "MULTI"):
            conn.multi.append(argv)
            self.sim.send(conn, conn.down, conn.client.on_reply, conn, request, "QUEUED")
            return
        value: Any
        if name in ("AUTH", "CLIENT") and (len(argv) < 2 or argv[1].upper() != "KILL"):
            value = "OK"
        elif name == "PING":
            value = "PONG"
        elif name == "INFO":
            value = self.info()
        elif name == "SUBSCRIBE":
            conn.subscribed = True
            conn.kind = "pubsub"
            value = [b"subscribe", argv[1].encode(), 1]
        elif name == "PUBLISH":
            value = self.sim.publish(self, argv[1], argv[2])
        elif name == "MULTI":
            conn.multi = []
            value = "OK"
        elif name == "EXEC":
            queued, conn.multi = conn.multi or [], None
            value = [self.execute(conn, q) for q in queued]
        elif name == "FENCE":
            value = self.fence(int(argv[1]))
        else:
            value = self.execute(conn, argv)
        self.sim.send(conn, conn.down, conn.client.on_reply, conn, request, value)

    def execute(self, conn: Conn, argv: tuple[str, ...]) -> Any:
        name = argv[0].upper()
        if name == "SLAVEOF":
            return self.slaveof(argv[1:])
        if name == "CONFIG":
            self.config_master = self.master_addr
            return "OK"
        if name == "CLIENT":
            kind = argv[3].lower()
            self.sim.kill_clients(self, kind, conn)
            return "OK"
        return RespError("ERR unknown command")

    def slaveof(self, args: tuple[str, ...]) -> Any:
        epoch = int(args[3]) if len(args) >= 4 and args[2].upper() == "EPOCH" else None
        position = (int(args[5]), int(args[6])) if len(args) == 7 and args[4].upper() == "POSITION" else None
        if args[0].upper() == "NO" and args[1].upper() == "ONE":
            if self.sim.fenced:
                # Promotion only by the failover that fenced us, never twice per epoch, and
                # only with the log its FENCE reply showed.
                if epoch is None or epoch < self.fence_epoch or self.log_epoch() >= epoch:
                    return RespError("STALEEPOCH promotion refused")
                if position is None or position != (self.log_epoch(), self.offset):
                    return RespError("STALEEPOCH promotion refused: not at the position relied on")
                self.fence_epoch = epoch
            if self.role == "master":
                if self.sim.fenced:
                    # A primary promoted in a newer epoch starts that tenure, its log kept
                    # (node/replication/role.py, `promote`): its lease starts empty.
                    assert epoch is not None
                    self.epoch = epoch
                    self.log.append((epoch, None))
                    self.acks = {}
                    self.sim.promoted(self)
                return "OK"
            self.role = "master"
            self.master_addr = None
            self.link_up = False
            self.acks = {}
            if self.sim.fenced:
                assert epoch is not None
                self.epoch = epoch
                self.log.append((epoch, None))
            self.sim.promoted(self)
            return "OK"
        addr = (args[0], int(args[1]))
        if self.role == "master":
            self.sim.demoted(self)
            self.waiters = []
        self.role = "slave"
        self.master_addr = addr
        self.link_up = False
        self.link_down_since = self.sim.now
        return "OK"

    def fence(self, epoch: int) -> Any:
        if epoch > self.fence_epoch:
            self.fence_epoch = epoch
        return [self.fence_epoch, self.log_epoch(), self.offset, self.node_id.encode()]

    # replication: a replica asks, its master answers with the log, the replica acks
    def repl_tick(self, gen: int) -> None:
        sim = self.sim
        if not self.alive or gen != self.gen:
            return
        sim.at(sim.now + REPL_PERIOD, self.repl_tick, gen)
        if self.paused:
            return
        if self.role == "master":
            if not sim.workload and not self.stepped_down():
                # Background writes, so that replicas' offsets differ.
                sim.background_writes += 1
                self.log.append((self.epoch, -sim.background_writes))
            self.check_waiters()
            return
        master = sim.by_addr.get(self.master_addr) if self.master_addr else None
        if self.link_up and sim.now - self.last_io > REPL_TIMEOUT:
            self.link_up = False
            self.link_down_since = sim.now
        if isinstance(master, NodeProc) and master is not self:
            sim.deliver(self, master, master.on_sync_request, self, self.offset)

    def on_sync_request(self, replica: NodeProc, acked: int) -> None:
        if self.role != "master" and not self.link_up:
            return  # a replica serves its own replicas only while it is in sync itself
        sent = self.local()
        self.sim.deliver(self, replica, replica.on_sync_data, self, self.epoch, self.log, len(self.log), sent)

    def on_sync_data(self, master: NodeProc, epoch: int, log: list[tuple[int, int | None]], length: int, sent: int) -> None:
        if self.role != "slave" or self.master_addr != (master.host, master.port):
            return
        if self.sim.fenced:
            if epoch < self.fence_epoch:
                return  # a primary older than our fence: no data, no acknowledgement
            self.fence_epoch = epoch
            self.epoch = epoch
        mine = self.log
        n = len(mine)
        if n <= length and (n == 0 or log[n - 1] == mine[-1]):
            mine.extend(log[n:length])
        else:
            # Diverged (or the master is behind): resync from the master's log. The log file
            # holds the old one until the new one's base is written.
            if self.sim.now >= self.rewrite_until:
                self.old_log = mine
            self.rewrite_until = self.sim.now + self.sim.rng.randint(*self.sim.rewrite_ms)
            self.log = log[:length]
        if not self.link_up:
            self.link_up = True
        self.last_io = self.sim.now
        self.sim.deliver(self, master, master.on_ack, self, self.written(), sent)

    def on_ack(self, replica: NodeProc, written: int, sent: int) -> None:
        if replica.master_addr != (self.host, self.port):
            return
        # Keyed by the replica's durable node id (by its run id, which every restart changes,
        # in `lease_by_run_id`: how nodes counted before).
        self.acks[replica.run_id if self.sim.lease_by_run_id else replica.node_id] = (written, sent)
        self.check_waiters()

    # the workload
    def on_write(self, conn: Conn, wid: int) -> None:
        if self.role != "master" or not self.lease_valid():
            self.sim.send(conn, conn.down, conn.client.on_write_reply, wid, None)
            return
        self.log.append((self.epoch, wid))
        self.sim.write_accepted(self, wid)
        self.sim.send(conn, conn.down, conn.client.on_write_reply, wid, len(self.log))

    def on_wait(self, conn: Conn, wid: int, offset: int, count: int, timeout: int) -> None:
        self.waiters.append((conn, wid, offset, count, self.sim.now + timeout, self.epoch))
        self.check_waiters()

    def check_waiters(self) -> None:
        if not self.waiters:
            return
        keep = []
        for waiter in self.waiters:
            conn, wid, offset, count, deadline, epoch = waiter
            acked = sum(1 for off, _ in self.acks.values() if off >= offset)
            if acked >= count and self.role == "master" and self.epoch == epoch and self.lease_valid():
                self.sim.wait_acked(self, wid, epoch)
                self.sim.send(conn, conn.down, conn.client.on_wait_reply, wid, True)
            elif self.sim.now >= deadline or self.role != "master":
                self.sim.send(conn, conn.down, conn.client.on_wait_reply, wid, False)
            else:
                keep.append(waiter)
        self.waiters = keep


# ---------------------------------------------------------------------------- the client


class _Lane:
    """One writer of the client: at most one write (then its WAIT) outstanding."""

    __slots__ = ("index", "current", "busy_until", "node", "conn", "gen")

    def __init__(self, index: int) -> None:
        self.index = index
        self.current: int | None = None
        self.busy_until = 0
        self.node: NodeProc | None = None
        self.conn: Conn | None = None
        self.gen = 0  # the lane's next write is scheduled under this number (older ones are void)


class ClientProc(Proc):
    """`LANES` writers, each writing one entry at a time to whoever a random sentinel calls
    master, then WAITing for a majority of the replica set (primary included), then pausing
    `THINK_MS` before the next. Several writers, so that one waiting out a WAIT does not leave
    a primary without write attempts. A write or WAIT not answered within 3 s is given up."""

    LANES = 3
    THINK_MS = (30, 90)

    def __init__(self, sim: Sim) -> None:
        super().__init__(sim, "client", "10.0.2.1", 0)
        self.conns: dict[tuple[int, str], Conn] = {}
        self.next_wid = 0
        self.lanes = [_Lane(i) for i in range(self.LANES)]
        self.owner: dict[int, _Lane] = {}  # outstanding write id -> its lane
        for i, lane in enumerate(self.lanes):
            self.sim.at(3000 + 17 * i, self.loop, lane, lane.gen)

    def _next(self, lane: _Lane, delay: int) -> None:
        lane.gen += 1
        self.sim.at(self.sim.now + delay, self.loop, lane, lane.gen)

    def loop(self, lane: _Lane, gen: int) -> None:
        sim = self.sim
        if gen != lane.gen:
            return
        self._free(lane)
        views = [s for s in sim.sentinels if s.alive and not s.paused and not sim.is_blocked(self, s)]
        addr = sim.rng.choice(views).view().current_address() if views else None
        node = sim.by_addr.get((addr.host, addr.port)) if addr is not None else None
        if not isinstance(node, NodeProc) or not node.alive:
            self._next(lane, 50)
            return
        conn = self.conns.get((lane.index, node.name))
        if conn is None or not conn.open:
            conn = Conn(self, 0, node, False)
            self.conns[(lane.index, node.name)] = conn
            sim.connect(conn, node)
        self.next_wid += 1
        lane.current = self.next_wid
        self.owner[lane.current] = lane
        lane.node = node
        lane.conn = conn
        self._next(lane, 3000)  # given up if not answered by then
        sim.send(conn, conn.up, node.on_write, conn, self.next_wid)

    def _free(self, lane: _Lane) -> None:
        if lane.current is not None:
            self.owner.pop(lane.current, None)
            lane.current = None

    def _done(self, lane: _Lane) -> None:
        self._free(lane)
        low, high = self.THINK_MS
        self._next(lane, low + int(self.sim.rng.random() * (high - low)))

    def on_connected(self, conn: Conn) -> None:
        pass

    def on_closed(self, conn: Conn) -> None:
        for lane in self.lanes:
            if lane.conn is conn and lane.current is not None:
                self._done(lane)

    def on_write_reply(self, wid: int, offset: int | None) -> None:
        lane = self.owner.get(wid)
        if lane is None:
            return
        if offset is None:
            self._done(lane)
            return
        self.sim.attempted.add(wid)
        assert lane.conn is not None and lane.node is not None
        need = lane.node.set_size // 2  # replicas, with the primary a majority of the replica set
        self.sim.send(lane.conn, lane.conn.up, lane.node.on_wait, lane.conn, wid, offset, need, 1000)

    def on_wait_reply(self, wid: int, acked: bool) -> None:
        lane = self.owner.get(wid)
        if lane is not None:
            self._done(lane)
        if acked:
            self.sim.client_acked.add(wid)


# ---------------------------------------------------------------------------- the world


@dataclass
class Fault:
    """kind: partition (cut from everyone), partition-sentinels (a node cut from every
    sentinel), kill (SIGKILL, restarted at the end), pause (SIGSTOP), flap (a link cut and
    healed over and over), reset (one connection reset), bounce (SIGKILLed and restarted
    every 0.5 s), step (its wall clock steps, for good), stale-sentinels (the master cut from
    the sentinels, which restart from configuration files missing some replicas), join (a
    new node joins the replica set), leave (a replica leaves it; every sentinel then gets
    SENTINEL RESET, as the operator's procedure says), minority-bounce (the master and one of
    its replicas cut off from the sentinels and the other nodes, the master keeping its
    clients, that replica SIGKILLed and restarted every 0.5 s), split-majority (the master and
    ⌊N/2⌋ of its replicas, with the clients, cut off from every sentinel and the other
    replicas: a fenced failover can fence only a minority and aborts; the chaos lab's
    split-majority))."""

    kind: str
    target: str
    start: int
    duration: int
    other: str = ""


@dataclass
class Sim:
    seed: int
    n_sentinels: int = 3
    n_nodes: int = 3
    quorum: int = 2
    down_after: int = 1000
    failover_timeout: int = 3000
    parallel_syncs: int = 1
    fenced: bool = False
    lease_ms: int = 1000
    # The nodes' fenced-lease-milliseconds when it differs from the sentinels' (a mistake).
    node_lease_ms: int | None = None
    drift_permille: int = 50
    clock_drift: float = 0.0
    workload: bool = False
    # The sentinels start knowing each other and the replicas (sentinel_conf).
    warm: bool = False
    latency: tuple[int, int] = (1, 15)
    checker: Any = None
    # Nodes count lease echoes by the replica's run id instead of its node id (a mistake).
    lease_by_run_id: bool = False
    # What sentinels time durations with: "boottime" (node/sentinel/clock.py) or "wall".
    sentinel_clock: str = "boottime"
    # Step the wall clock of a sentinel that starts waiting out the lease by this many ms,
    # `wait_lease_steps` times 400 ms apart (each under TILT's 2 s with the ticks between).
    step_on_wait_lease: tuple[int, int] | None = None
    wait_lease_steps: int = 1
    # How long a node's log file keeps the log a full resync replaced (its AOF rewrite), ms.
    rewrite_ms: tuple[int, int] = (50, 500)
    # When a sentinel starts waiting out the lease, crash and restart every node whose log
    # file still holds an older log (it restarts from that older AOF).
    restart_on_wait_lease: bool = False
    now: int = 0
    steps: int = 0
    events: list[tuple[int, str, str, str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)
        self._queue: list[tuple[int, int, Callable[..., None], tuple[Any, ...]]] = []
        self._seq = 0
        self.blocked: set[frozenset[str]] = set()
        self.by_addr: dict[tuple[str, int], Proc] = {}
        self.procs: dict[str, Proc] = {}
        # Workload bookkeeping: writes acknowledged by WAIT (decided by a primary), and what
        # the client saw.
        self.acked: dict[int, tuple[str, int, int]] = {}  # wid -> (node, epoch, time)
        self.client_acked: set[int] = set()
        self.attempted: set[int] = set()
        self.promotions: list[tuple[int, str, int]] = []  # (time, node, epoch)
        self.lost_at_promotion: set[int] = set()
        self.late_acks: list[tuple[int, str, int]] = []
        self.background_writes = 0
        self.wall_steps: list[tuple[int, str, int]] = []
        self.restarts_from_old_aof = 0
        self.forgotten = 0  # known-replica lines sentinels lost (stale-sentinels)
        self.membership_changes = 0
        self.nodes: list[NodeProc] = []
        first: NodeProc | None = None
        for i in range(self.n_nodes):
            node = NodeProc(self, i, first)
            first = first or node
            self.nodes.append(node)
            self._add(node)
        assert first is not None
        myids = ["%040x" % self.rng.getrandbits(160) for _ in range(self.n_sentinels)]
        self.sentinels = [SentinelProc(self, i, self.sentinel_conf(first, i, myids), myids[i])
                          for i in range(self.n_sentinels)]
        for s in self.sentinels:
            self._add(s)
        self.client = ClientProc(self) if self.workload else None
        if self.client is not None:
            self._add(self.client)

    def sentinel_conf(self, master: NodeProc, index: int, myids: list[str]) -> str:
        """Sentinel `index`'s file; `warm`: as after a while of running, with its id, the
        replicas and the other sentinels already known (no waiting for their discovery)."""
        lines = [
            "port 26379",
            f"sentinel monitor {NAME} {master.host} {master.port} {self.quorum}",
            f"sentinel down-after-milliseconds {NAME} {self.down_after}",
            f"sentinel failover-timeout {NAME} {self.failover_timeout}",
            f"sentinel parallel-syncs {NAME} {self.parallel_syncs}",
        ]
        if self.fenced:
            lines.append(f"sentinel fenced-mode {NAME} yes")
            lines.append(f"sentinel fenced-lease-milliseconds {NAME} {self.lease_ms}")
            lines.append(f"sentinel fenced-clock-drift-permille {self.drift_permille}")
        if self.warm:
            lines.append(f"sentinel myid {myids[index]}")
            lines += [f"sentinel known-replica {NAME} {n.host} {n.port}" for n in self.nodes if n is not master]
            lines += [f"sentinel known-sentinel {NAME} 10.0.0.{i + 1} 26379 {myid}"
                      for i, myid in enumerate(myids) if i != index]
        return "\n".join(lines) + "\n"

    def timings(self) -> Timings:
        return Timings()

    def tick_interval(self) -> int:
        # Redis ticks at 10-19 Hz; slower ticks keep the simulation cheap and change no rule
        # (all timers are far longer, and TILT triggers only past 2 s).
        return 150 + int(self.rng.random() * 150)

    def _add(self, proc: Proc) -> None:
        self.procs[proc.name] = proc
        self.by_addr[(proc.host, proc.port)] = proc

    # scheduling
    def at(self, time: int, fn: Callable[..., None], *args: Any) -> None:
        self._seq += 1
        heapq.heappush(self._queue, (time, self._seq, fn, args))

    def run_until(self, end: int) -> None:
        queue = self._queue
        check = self.checker
        while queue and queue[0][0] <= end:
            time, _, fn, args = heapq.heappop(queue)
            self.now = time
            fn(*args)
            self.steps += 1
            if check is not None:
                check.after_step()
        self.now = end

    # network
    def is_blocked(self, a: Proc, b: Proc) -> bool:
        return bool(self.blocked) and frozenset((a.name, b.name)) in self.blocked

    def lat(self) -> int:
        low, high = self.latency
        return low + int(self.rng.random() * (high - low + 1))

    def send(self, conn: Conn, pipe: Pipe, fn: Callable[..., None], *args: Any) -> None:
        if not conn.open:
            return
        if pipe.held or self.is_blocked(pipe.src, pipe.dst):
            pipe.held.append((fn, args))
            return
        self._schedule(conn, pipe, fn, args)

    def _schedule(self, conn: Conn, pipe: Pipe, fn: Callable[..., None], args: tuple[Any, ...]) -> None:
        t = max(self.now + self.lat(), pipe.last_ready)
        pipe.last_ready = t
        self.at(t, self._arrive, conn, pipe, fn, args)

    def _arrive(self, conn: Conn, pipe: Pipe, fn: Callable[..., None], args: tuple[Any, ...]) -> None:
        if not conn.open:
            return
        if fn == self._accept:
            fn(*args)  # the kernel's part: no need for the process to run
        else:
            pipe.dst.run(fn, *args)

    def deliver(self, src: Proc, dst: Proc, fn: Callable[..., None], *args: Any) -> None:
        """Node-to-node replication traffic: dropped while the path is cut (the replica asks
        again next period)."""
        if self.is_blocked(src, dst):
            return
        self.at(self.now + self.lat(), self._deliver, dst, fn, args)

    def _deliver(self, dst: Proc, fn: Callable[..., None], args: tuple[Any, ...]) -> None:
        dst.run(fn, *args)

    def connect(self, conn: Conn, server: Proc | None) -> None:
        if server is None:
            conn.open = False
            self.at(self.now + self.lat(), conn.client.run, conn.client.on_closed, conn)
            return
        self.send(conn, conn.up, self._accept, conn)

    def _accept(self, conn: Conn) -> None:
        """The server's kernel completes the handshake (even for a paused process), or
        refuses it (a killed one)."""
        server = conn.server
        if not server.alive:
            self.server_close(conn)
            return
        server.server_conns[conn] = None
        self.send(conn, conn.down, conn.client.on_connected, conn)

    def flush_held(self, conn: Conn) -> None:
        for pipe in (conn.up, conn.down):
            if pipe.held and not self.is_blocked(pipe.src, pipe.dst):
                held = list(pipe.held)
                pipe.held.clear()
                for fn, args in held:
                    self._schedule(conn, pipe, fn, args)

    def close(self, conn: Conn) -> None:
        """The client closed it."""
        conn.open = False
        conn.server.server_conns.pop(conn, None)

    def server_close(self, conn: Conn) -> None:
        """The server side went away (killed, CLIENT KILL): the client learns it unless the
        path is cut."""
        if not conn.open:
            return
        conn.open = False
        conn.server.server_conns.pop(conn, None)
        if not self.is_blocked(conn.server, conn.client):
            self.at(self.now + self.lat(), conn.client.run, conn.client.on_closed, conn)

    def all_conns(self) -> list[Conn]:
        out = []
        for p in self.procs.values():
            if isinstance(p, (SentinelProc, ClientProc)):
                out.extend(p.conns.values())
        return out

    # node helpers
    def followers(self, master: NodeProc) -> list[NodeProc]:
        addr = (master.host, master.port)
        return [n for n in self.nodes if n.alive and n.role == "slave" and n.master_addr == addr and n.link_up
                and not n.removed]

    def publish(self, node: NodeProc, channel: str, payload: str, propagate: bool = True) -> int:
        receivers = 0
        for conn in list(node.server_conns):
            if conn.subscribed and conn.open:
                receivers += 1
                self.send(conn, conn.down, conn.client.on_message, conn, channel.encode(), payload.encode())
        if propagate and node.role == "master":
            # Redis propagates PUBLISH to replicas, whose subscribers get it too.
            for replica in self.followers(node):
                self.deliver(node, replica, self._publish_on, replica, channel, payload)
        return receivers

    def _publish_on(self, replica: NodeProc, channel: str, payload: str) -> None:
        self.publish(replica, channel, payload, propagate=False)

    def kill_clients(self, node: NodeProc, kind: str, caller: Conn) -> None:
        for conn in list(node.server_conns):
            if conn is not caller and conn.kind == kind:
                self.server_close(conn)

    # workload bookkeeping (invariants read these)
    def promoted(self, node: NodeProc) -> None:
        self.promotions.append((self.now, node.name, node.epoch))
        missing = {w for w in self.acked if all(e[1] != w for e in node.log)} if self.acked else set()
        self.lost_at_promotion |= missing
        if self.checker is not None:
            self.checker.on_promotion(node, missing)

    def demoted(self, node: NodeProc) -> None:
        pass

    def write_accepted(self, node: NodeProc, wid: int) -> None:
        if self.checker is not None:
            self.checker.on_write(node, wid, node.epoch)

    def wait_acked(self, node: NodeProc, wid: int, epoch: int) -> None:
        self.acked[wid] = (node.name, epoch, self.now)
        if self.checker is not None:
            self.checker.on_ack(node, wid, epoch)

    # observation hooks for the checker
    def observe(self, sentinel: SentinelProc, actions: list[Any]) -> None:
        for action in actions:
            if isinstance(action, Event):
                self.events.append((self.now, sentinel.name, action.type, action.message))
                if action.type == "+failover-state-wait-lease" and self.step_on_wait_lease is not None:
                    for i in range(self.wait_lease_steps):
                        self.at(self.now + 400 * i, sentinel.step_wall, self.rng.randint(*self.step_on_wait_lease))
                if action.type == "+failover-state-wait-lease" and self.restart_on_wait_lease:
                    for node in self.nodes:
                        if node.alive and node.old_log is not None and self.now < node.rewrite_until:
                            self.restarts_from_old_aof += 1
                            self.restart(node, self.rng.randrange(50, 300))
                if self.checker is not None:
                    self.checker.on_event(sentinel, action)

    def before_tick(self, sentinel: SentinelProc) -> None:
        if self.checker is not None:
            master = sentinel.policy.masters.get(NAME)
            if master is not None and master.failover_state == FAILOVER_SELECT_SLAVE:
                self.checker.before_select(sentinel, master)

    # faults
    def apply_fault(self, fault: Fault) -> None:
        self.at(fault.start, self._fault_start, fault)
        self.at(fault.start + fault.duration, self._fault_end, fault)

    def _fault_start(self, fault: Fault) -> None:
        if fault.kind in ("stale-sentinels", "minority-bounce", "split-majority"):
            fault.target = "master"
        if fault.target == "master":
            # Whichever node most sentinels call master now.
            views = [s.view().current_address() for s in self.sentinels if s.alive]
            addr = max(views, key=views.count) if views else None
            fault.target = self.by_addr[(addr.host, addr.port)].name if addr else self.nodes[0].name
        proc = self.procs[fault.target]
        if getattr(proc, "removed", False):
            return
        if fault.kind == "partition":
            for other in self.procs.values():
                if other is not proc:
                    self.blocked.add(frozenset((proc.name, other.name)))
        elif fault.kind in ("partition-sentinels", "stale-sentinels"):
            # One node cut from every sentinel, still reaching the other nodes and clients.
            for other in self.sentinels:
                if other is not proc:
                    self.blocked.add(frozenset((proc.name, other.name)))
            if fault.kind == "stale-sentinels":
                for sentinel in self.sentinels:
                    self._forget_replicas(sentinel)
        elif fault.kind == "bounce":
            self._bounce(fault, proc)
        elif fault.kind == "minority-bounce":
            replicas = [n for n in self.followers(proc)] if isinstance(proc, NodeProc) else []
            if not replicas:
                return
            replica = self.rng.choice(replicas)
            fault.other = replica.name
            for inside in (proc, replica):
                for other in self.procs.values():
                    if other not in (proc, replica) and other is not self.client:
                        self.blocked.add(frozenset((inside.name, other.name)))
            self._bounce(fault, replica)
        elif fault.kind == "split-majority":
            replicas = self.followers(proc) if isinstance(proc, NodeProc) else []
            kept = self.rng.sample(replicas, min(len(replicas), len(self.members()) // 2))
            fault.other = ",".join(r.name for r in kept)
            inside = [proc, *kept]
            for node in inside:
                for other in self.procs.values():
                    if other not in inside and other is not self.client:
                        self.blocked.add(frozenset((node.name, other.name)))
        elif fault.kind == "step":
            proc.step_wall(self.rng.choice((-1, 1)) * self.rng.randrange(100, 3000))
        elif fault.kind in ("join", "leave"):
            self._change_membership(fault.kind, self.now + 60_000)
        elif fault.kind == "pause":
            proc.paused = True
        elif fault.kind == "kill":
            self._kill(proc)
        elif fault.kind == "flap":
            self._flap(fault, True)
        elif fault.kind == "reset":
            conns = [c for c in self.all_conns() if c.open]
            if conns:
                conn = self.rng.choice(conns)
                self.server_close(conn)

    def _kill(self, proc: Proc) -> None:
        proc.alive = False
        if isinstance(proc, NodeProc):
            proc.crash()
        for conn in list(proc.server_conns):
            self.server_close(conn)
        for conn in self.all_conns():
            if conn.client is proc:
                conn.open = False
                conn.server.server_conns.pop(conn, None)

    def _revive(self, proc: Proc) -> None:
        if proc.alive or getattr(proc, "removed", False):
            return
        proc.alive = True
        proc.inbox.clear()
        proc.paused = False
        if isinstance(proc, (SentinelProc, NodeProc)):
            proc.boot()

    def restart(self, proc: Proc, after: int) -> None:
        """SIGKILL now, started again `after` ms later."""
        if proc.alive:
            self._kill(proc)
            self.at(self.now + after, self._revive, proc)

    def _flap(self, fault: Fault, cut: bool) -> None:
        if self.now >= fault.start + fault.duration:
            return
        pair = frozenset((fault.target, fault.other))
        if cut:
            self.blocked.add(pair)
        else:
            self.blocked.discard(pair)
            self._heal()
        self.at(self.now + self.rng.randrange(100, 800), self._flap, fault, not cut)

    def _bounce(self, fault: Fault, proc: Proc) -> None:
        if self.now >= fault.start + fault.duration:
            return
        self.restart(proc, self.rng.randrange(50, 200))
        self.at(self.now + 500, self._bounce, fault, proc)

    def _forget_replicas(self, sentinel: SentinelProc) -> None:
        """Restarts a sentinel from its configuration file without the known-replica lines of
        some replicas (a file restored from a backup, or written before it learned them)."""
        lines = sentinel.conf.splitlines()
        known = [line for line in lines if line.startswith(f"sentinel known-replica {NAME} ")]
        if not known or not sentinel.alive:
            return
        forgotten = set(self.rng.sample(known, self.rng.randint(1, len(known))))
        sentinel.conf = "\n".join(line for line in lines if line not in forgotten) + "\n"
        self.restart(sentinel, self.rng.randrange(100, 500))
        self.forgotten += len(forgotten)

    def members(self) -> list[NodeProc]:
        return [n for n in self.nodes if not n.removed]

    def settled(self) -> bool:
        """No failover runs, every sentinel names the same master, and every live member
        replicates it: when an operator may change the replica set (docs/safety.md)."""
        views = {(s.view().current_address().host, s.view().current_address().port) for s in self.sentinels if s.alive}
        if len(views) != 1 or not self.failover_idle():
            return False
        addr = views.pop()
        return all(n.role == "slave" and n.master_addr == addr and n.link_up
                   for n in self.members() if n.alive and (n.host, n.port) != addr)

    def _change_membership(self, kind: str, give_up: int) -> None:
        if not self.settled():
            if self.now < give_up:
                self.at(self.now + 1000, self._change_membership, kind, give_up)
            return
        if kind == "join":
            self._join()
        else:
            self._leave()

    def _join(self) -> None:
        """A node joins as a replica of the master; every member's fenced-replica-set-size
        grows by one (the operator reconfigures them one after the other; here at once)."""
        views = [s.view().current_address() for s in self.sentinels if s.alive]
        addr = max(views, key=views.count) if views else None
        master = self.by_addr.get((addr.host, addr.port)) if addr else None
        if not isinstance(master, NodeProc) or len(self.members()) >= 7:
            return
        node = NodeProc(self, len(self.nodes), master)
        self.nodes.append(node)
        self._add(node)
        for member in self.members():
            member.set_size = len(self.members())
        self.membership_changes += 1

    def _leave(self) -> None:
        """A replica leaves for good; the members' fenced-replica-set-size shrinks by one and
        every sentinel is reset (SENTINEL RESET: it learns the replicas again from the master)."""
        views = [s.view().current_address() for s in self.sentinels if s.alive]
        addr = max(views, key=views.count) if views else None
        replicas = [n for n in self.members() if n.alive and (n.host, n.port) != (addr.host, addr.port)] if addr else []
        if len(self.members()) <= 3 or not replicas:
            return
        node = self.rng.choice(replicas)
        self._kill(node)
        node.removed = True
        for member in self.members():
            member.set_size = len(self.members())
        for sentinel in self.sentinels:
            if sentinel.alive and not sentinel.paused:
                sentinel.policy.reset(NAME, now=sentinel.policy_now())
                sentinel.apply(sentinel.policy.take_actions())
        self.membership_changes += 1

    def _fault_end(self, fault: Fault) -> None:
        proc = self.procs[fault.target]
        if fault.kind in ("partition", "partition-sentinels", "stale-sentinels", "flap", "minority-bounce",
                          "split-majority"):
            names = (proc.name, *fault.other.split(",")) if fault.kind in ("minority-bounce", "split-majority") else (
                proc.name,)
            for name in names:
                for other in self.procs.values():
                    self.blocked.discard(frozenset((name, other.name)))
            self._heal()
        elif fault.kind == "pause":
            proc.resume()
        elif fault.kind == "kill":
            self._revive(proc)

    def _heal(self) -> None:
        for conn in self.all_conns():
            if conn.open:
                self.flush_held(conn)

    def random_faults(self, count: int, start: int, kinds: tuple[str, ...], max_duration: int,
                      plan: tuple[str, ...] | None = None, gap: tuple[int, int] | None = None,
                      on_master: float = 0.5) -> int:
        """`count` faults one after the other, each healed before the next starts; returns
        when the last one heals. With a `plan`, its faults in that order, each on the master.
        Between two faults: `gap` ms (a random span in it), by default 1-4 failover timeouts.
        A random fault hits the master with probability `on_master`, else any process."""
        t = start
        names = list(self.procs)
        if self.client is not None:
            names.remove("client")
        for i in range(count if plan is None else len(plan)):
            kind = self.rng.choice(kinds) if plan is None else plan[i]
            target = "master" if plan is not None or self.rng.random() < on_master else self.rng.choice(names)
            duration = self.rng.randrange(200, max_duration)
            other = self.rng.choice([n for n in names if n != target])
            if target == "master" and kind == "flap":
                kind = "partition"  # the flap's other end is chosen up front
            self.apply_fault(Fault(kind, target, t, duration, other))
            t += duration + self.rng.randrange(*(gap or (self.failover_timeout, 4 * self.failover_timeout)))
        return t

    # views
    def live_sentinels(self) -> list[SentinelProc]:
        return [s for s in self.sentinels if s.alive]

    def sdown(self, sentinel: SentinelProc, ri: Instance) -> bool:
        return bool(ri.flags & S_DOWN)

    def failover_idle(self) -> bool:
        return all(s.view().failover_state == FAILOVER_NONE for s in self.live_sentinels())
