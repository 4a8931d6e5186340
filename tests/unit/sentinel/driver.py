"""A policy driven by hand for rule-by-rule tests: connections open at once, and the test
answers the commands the sentinel sends (or leaves them unanswered)."""

from __future__ import annotations

import random
from typing import Any

from node.sentinel.instance import Instance
from node.sentinel.messages import Close, Connect, Connected, Event, FlushConfig, Reply, Send, Tick, Value
from node.sentinel.policy import Sentinel

MYID = "a" * 40
MASTER = ("10.0.0.1", 6379)


def fenced_fields(fenced: tuple[int, int, str] | None, epochs: tuple[int, int, int] = (0, 0, 0),
                  leads: bool | None = None) -> list[str]:
    """A fenced node's INFO replication fields: `fenced` is (fenced-replica-set-size,
    fenced-lease-milliseconds, node id), `epochs` (fence epoch, log epoch, epoch), `leads` a
    primary's leads_epoch."""
    if fenced is None:
        return []
    size, lease, node_id = fenced
    fence_epoch, log_epoch, epoch = epochs
    lines = ["fenced_mode:yes", f"fenced_node_id:{node_id}", f"fenced_replica_set_size:{size}",
             f"fenced_lease_milliseconds:{lease}", f"fence_epoch:{fence_epoch}", f"log_epoch:{log_epoch}",
             f"epoch:{epoch}"]
    if leads is not None:
        lines.append(f"leads_epoch:{int(leads)}")
    return lines


def info_master(run_id: str, replicas: list[tuple[str, int, int]] = (),  # type: ignore[assignment]
                fenced: tuple[int, int, str] | None = None, epochs: tuple[int, int, int] = (0, 0, 0)) -> bytes:
    lines = ["# Server", f"run_id:{run_id}", "", "# Replication", "role:master", f"connected_slaves:{len(replicas)}"]
    for i, (ip, port, offset) in enumerate(replicas):
        lines.append(f"slave{i}:ip={ip},port={port},state=online,offset={offset},lag=0")
    lines += fenced_fields(fenced, epochs, leads=None if fenced is None else epochs[0] <= epochs[2])
    return ("\r\n".join(lines) + "\r\n").encode()


def info_replica(
    run_id: str,
    master: tuple[str, int] = MASTER,
    *,
    offset: int = 100,
    priority: int = 100,
    link_up: bool = True,
    down_since: int = 0,
    fenced: tuple[int, int, str] | None = None,
    epochs: tuple[int, int, int] = (0, 0, 0),
) -> bytes:
    lines = [
        "# Server", f"run_id:{run_id}", "", "# Replication", "role:slave",
        f"master_host:{master[0]}", f"master_port:{master[1]}",
        f"master_link_status:{'up' if link_up else 'down'}", f"slave_repl_offset:{offset}",
    ]
    if not link_up:
        lines.append(f"master_link_down_since_seconds:{down_since}")
    lines += [f"slave_priority:{priority}", "slave_read_only:1", "replica_announced:1"]
    lines += fenced_fields(fenced, epochs)
    return ("\r\n".join(lines) + "\r\n").encode()


class Driver:
    def __init__(self, *, quorum: int = 2, down_after: int = 5000, failover_timeout: int = 60_000, seed: int = 0) -> None:
        self.now = 1_000_000
        self.s = Sentinel(MYID, now=self.now, rng=random.Random(seed))
        self.master = self.s.monitor("mymaster", *MASTER, quorum, now=self.now, announce=False)
        self.master.down_after_period = down_after
        self.master.failover_timeout = failover_timeout
        self.conns: dict[int, Connect] = {}
        self.pending: list[Send] = []
        self.events: list[Event] = []
        self.actions: list[Any] = []
        self.auto_connect = True
        self.wall_offset = 0  # the wall clock minus the monotonic one (steps change it)

    def record(self, actions: list[Any]) -> None:
        self.actions.extend(actions)
        for a in actions:
            if isinstance(a, Connect):
                self.conns[a.conn] = a
                if self.auto_connect:
                    self.record(self.s.step(Connected(self.now, a.conn, "10.9.9.9")))
            elif isinstance(a, Send):
                self.pending.append(a)
            elif isinstance(a, Close):
                self.conns.pop(a.conn, None)
                self.pending = [p for p in self.pending if p.conn != a.conn]
            elif isinstance(a, Event):
                self.events.append(a)

    def tick(self, ms: int = 100) -> None:
        self.now += ms
        self.record(self.s.step(Tick(self.now, self.now + self.wall_offset)))

    def step_wall(self, ms: int) -> None:
        """The wall clock steps (date -s, NTP): the monotonic clock does not."""
        self.wall_offset += ms

    def run(self, ms: int, step: int = 100, answer: Any = None) -> None:
        """Tick for `ms`, calling `answer(self)` after each tick."""
        end = self.now + ms
        while self.now < end:
            self.tick(step)
            if answer is not None:
                answer(self)

    def target(self, send: Send) -> tuple[str, int]:
        c = self.conns.get(send.conn)
        return (c.host, c.port) if c else ("?", 0)

    def sent(self, addr: tuple[str, int] | None = None, command: str | None = None) -> list[Send]:
        return [
            p for p in self.pending
            if (addr is None or self.target(p) == addr) and (command is None or p.argv[0].upper() == command.upper())
        ]

    def answer(self, send: Send, value: Value) -> None:
        self.pending.remove(send)
        self.record(self.s.step(Reply(self.now, send.conn, send.request, value)))

    def answer_all(self, addr: tuple[str, int] | None, command: str, value: Value) -> None:
        for send in self.sent(addr, command):
            self.answer(send, value)

    def discard(self, addr: tuple[str, int] | None = None) -> None:
        """Answer what nobody checks (AUTH, CLIENT, SUBSCRIBE, the MULTI block) with OK."""
        for send in self.sent(addr):
            if send.argv[0].upper() in ("AUTH", "CLIENT", "MULTI", "SLAVEOF", "CONFIG", "EXEC", "SUBSCRIBE", "PUBLISH"):
                self.answer(send, "OK")

    def types(self) -> list[str]:
        return [e.type for e in self.events]

    def messages(self, type_: str) -> list[str]:
        return [e.message for e in self.events if e.type == type_]

    def flushed(self) -> bool:
        return any(isinstance(a, FlushConfig) for a in self.actions)

    def add_sentinel(self, index: int) -> Instance:
        return self.s.add_known_sentinel(self.master, f"10.0.2.{index}", 26379, f"{index:040d}")

    def add_replica(self, index: int) -> Instance:
        return self.s.add_known_replica(self.master, f"10.0.1.{index}", 6379)
