"""A client group's workload, run as its own process inside the group's namespace (on a user's
deployment, on this machine: `python -m chaos.workload SPEC.json`), recording every operation
to its history file.

- Producers XADD unique values (`<process>-<n>`), each followed by no WAIT, `WAIT 1` or `WAIT`
  for a majority of the nodes; each value is sent at most once (no client retries), so a
  duplicate in the stream is the server's doing.
- A consumer reads the stream with XREADGROUP, XACKs each entry and then sends `WAIT` for a
  majority on the same connection (recorded as a `wait` operation naming the IDs it covers: an
  XACK it met is durable); when the primary changed it first XAUTOCLAIMs entries that stayed
  pending; at the end it drains the group.
- Readers tail one node each (replicas, mostly) with XREAD BLOCK.

Producers and consumers find the primary through Sentinel (redis-py's `Sentinel`), as an
application would, and keep one connection until an error. On a deployment, `routes` says
where the group connects for each announced address (its own proxy in front of that node), and
the password comes from the environment variable the spec names. Outcomes: a refused connection or
an error reply is `fail` (the command did not run); a timeout or a connection lost after the
command was sent is `info` (it may have run).
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import redis
from redis.backoff import NoBackoff
from redis.connection import Connection
from redis.retry import Retry
from redis.sentinel import Sentinel

from chaos.history import Recorder

SERVICE = "rill"
DEFAULT_GROUP = "g"


@dataclass(frozen=True)
class Spec:
    """What one worker process does (written as JSON by the runner)."""

    group: str
    out: str
    t0: float  # the runner's time.monotonic() at the run's start
    stop_at: float  # producers stop at this run time
    drain_flag: str  # consumers drain and everyone stops once this file exists
    deadline: float  # run time at which the worker gives up whatever it is doing
    sentinels: list[tuple[str, int]]
    nodes: dict[str, tuple[str, int]]  # node name -> announced address
    producers: list[dict[str, Any]]  # {"process", "mode", "wait"}
    consumers: list[str]  # process names
    readers: list[dict[str, str]]  # {"process", "node"}
    key: str = "chaos"
    stream_group: str = DEFAULT_GROUP
    interval: float = 0.05  # seconds between a producer's writes
    op_timeout: float = 2.0
    wait_timeout_ms: int = 1000
    majority_wait: int = 0  # replicas a consumer's WAIT after its XACKs asks for (0: no WAIT)
    service: str = SERVICE  # the name the sentinels monitor
    routes: dict[str, list[Any]] | None = None  # "host:port" announced -> [host, port] to connect to
    password_env: str = ""  # the environment variable holding the nodes' password
    sentinel_password_env: str = ""

    @staticmethod
    def load(path: str) -> Spec:
        with open(path, encoding="utf-8") as f:
            raw = json.load(f)
        raw["sentinels"] = [tuple(s) for s in raw["sentinels"]]
        raw["nodes"] = {k: tuple(v) for k, v in raw["nodes"].items()}
        return Spec(**raw)


class NotSent(Exception):
    """The command certainly did not reach a server (no primary known, connection refused)."""


class Worker:
    def __init__(self, spec: Spec) -> None:
        self.spec = spec
        self.rec = Recorder(spec.out, spec.t0)
        self.names = {tuple(addr): name for name, addr in spec.nodes.items()}
        self.crashed = False

    def now(self) -> float:
        return self.rec.now()

    def draining(self) -> bool:
        return os.path.exists(self.spec.drain_flag) or self.now() > self.spec.deadline

    def connect(self, host: str, port: int) -> Connection:
        """A connection to the node announced at host:port (through the group's route to it)."""
        host, port = (self.spec.routes or {}).get(f"{host}:{port}", (host, port))
        password = os.environ.get(self.spec.password_env) if self.spec.password_env else None
        conn = Connection(host=host, port=port, socket_timeout=self.spec.op_timeout, socket_connect_timeout=0.5,
                          retry=Retry(NoBackoff(), 0), decode_responses=True, password=password or None)
        try:
            conn.connect()
        except (redis.ConnectionError, redis.TimeoutError, OSError) as exc:
            raise NotSent(f"connect {host}:{port}: {exc}") from None
        return conn

    def op(self, process: str, f: str, call: Callable[[], dict[str, Any]], **fields: Any) -> dict[str, Any] | None:
        """Records `invoke`, runs `call`, records its completion; returns the ok fields."""
        self.rec.record({"type": "invoke", "f": f, "process": process, **fields})
        try:
            result = call()
        except NotSent as exc:
            self.rec.record({"type": "fail", "f": f, "process": process, **fields, "error": str(exc)})
            return None
        except redis.ResponseError as exc:
            self.rec.record({"type": "fail", "f": f, "process": process, **fields, "error": str(exc)})
            return None
        except (redis.ConnectionError, redis.TimeoutError, OSError) as exc:
            self.rec.record({"type": "info", "f": f, "process": process, **fields, "error": str(exc) or type(exc).__name__})
            raise
        self.rec.record({"type": "ok", "f": f, "process": process, **fields, **result})
        return result

    def run(self) -> bool:
        """Runs every client thread to its end; False if one died of an unexpected error (a
        broken harness: the runner fails the run) or is still running at the deadline."""
        jobs: list[tuple[Callable[[Any], None], Any]] = [(self.produce, p) for p in self.spec.producers]
        jobs += [(self.consume, c) for c in self.spec.consumers] + [(self.read, r) for r in self.spec.readers]
        threads = [threading.Thread(target=self._guard, args=job, daemon=True) for job in jobs]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(max(0.0, self.spec.deadline - self.now()) + 1.0)
        self.rec.close()
        return not self.crashed and not any(thread.is_alive() for thread in threads)

    def _guard(self, job: Callable[[Any], None], arg: Any) -> None:
        try:
            job(arg)
        except Exception:
            self.crashed = True
            traceback.print_exc()

    # -- the primary, through Sentinel ---------------------------------------------------------

    def primary_link(self) -> PrimaryLink:
        return PrimaryLink(self)

    # -- producers -----------------------------------------------------------------------------

    def produce(self, producer: dict[str, Any]) -> None:
        process, mode, wait = producer["process"], producer["mode"], int(producer["wait"])
        link = self.primary_link()
        n = 0
        while self.now() < self.spec.stop_at and not self.draining():
            started = time.monotonic()
            n += 1
            value = f"{process}-{n}"

            try:
                done = self.op(process, "xadd", partial(self._xadd, link, value, wait),
                               key=self.spec.key, value=value, mode=mode, wait=wait)
            except (redis.ConnectionError, redis.TimeoutError, OSError):
                done = None
            if done is None:
                link.drop()
                time.sleep(0.1)  # no primary or a refusal: do not spin
            time.sleep(max(0.0, self.spec.interval - (time.monotonic() - started)))
        link.drop()

    def _xadd(self, link: PrimaryLink, value: str, wait: int) -> dict[str, Any]:
        conn, node = link.get()
        entry_id = call(conn, "XADD", self.spec.key, "*", "v", value)
        result: dict[str, Any] = {"id": entry_id, "node": node, "acks": 0}
        if wait:
            # when the WAIT was sent: the earliest its answer can have been decided (G2)
            result["xadd_at"] = round(self.now(), 6)
            try:
                result["acks"] = int(call(conn, "WAIT", wait, self.spec.wait_timeout_ms))
            except (redis.RedisError, OSError) as exc:
                result["acks"], result["wait_error"] = None, str(exc)  # acknowledged, WAIT unknown
        return result

    def _xreadgroup(self, conn: Connection, node: str, process: str, count: int, block: int | None) -> dict[str, Any]:
        blocking = ["BLOCK", block] if block is not None else []
        reply = call(conn, "XREADGROUP", "GROUP", self.spec.stream_group, process, "COUNT", count, *blocking,
                     "STREAMS", self.spec.key, ">")
        return {"node": node, "entries": stream_entries(reply)}

    # -- consumers -----------------------------------------------------------------------------

    def consume(self, process: str) -> None:
        link = self.primary_link()
        last_node: str | None = None
        while not self.draining():
            try:
                conn, node = link.get()
            except NotSent:
                time.sleep(0.2)
                continue
            try:
                if last_node is not None and node != last_node:
                    # A new primary: entries delivered by the old one and never acknowledged
                    # stay pending here (if they survived); claim them.
                    self._claim(link, process, min_idle=1000)
                last_node = node
                read = self.op(process, "xreadgroup", partial(self._xreadgroup, conn, node, process, 20, 300))
                if read is None:
                    link.drop()
                    time.sleep(0.1)
                    continue
                self._ack(link, process, read["entries"])
            except (redis.ConnectionError, redis.TimeoutError, OSError):
                link.drop()
        self._drain(link, process)
        link.drop()

    def _ack(self, link: PrimaryLink, process: str, entries: list[list[str]]) -> None:
        """XACKs each entry, then WAITs for a majority on the same connection (a WAIT on
        another connection would count that one's writes, not the XACKs')."""
        if not entries:
            return
        conn, node = link.get()
        acked = []
        for entry_id, _ in entries:
            done = self.op(process, "xack", partial(self._xack, conn, node, entry_id), id=entry_id)
            if done is None:
                return
            if done["count"]:
                acked.append(entry_id)
        if acked and self.spec.majority_wait:
            self.op(process, "wait", partial(self._wait, conn, node), ids=acked, wait=self.spec.majority_wait)

    def _xack(self, conn: Connection, node: str, entry_id: str) -> dict[str, Any]:
        return {"count": int(call(conn, "XACK", self.spec.key, self.spec.stream_group, entry_id)), "node": node}

    def _wait(self, conn: Connection, node: str) -> dict[str, Any]:
        return {"acks": int(call(conn, "WAIT", self.spec.majority_wait, self.spec.wait_timeout_ms)), "node": node}

    def _xautoclaim(self, link: PrimaryLink, process: str, min_idle: int, cursor: str) -> dict[str, Any]:
        conn, node = link.get()
        reply = call(conn, "XAUTOCLAIM", self.spec.key, self.spec.stream_group, process, min_idle, cursor,
                     "COUNT", 100)
        return {"node": node, "cursor": str(reply[0]), "entries": _pairs(reply[1])}

    def _claim(self, link: PrimaryLink, process: str, min_idle: int) -> bool:
        """XAUTOCLAIMs pending entries idle for `min_idle` ms, in pages; acknowledges them.
        Returns whether the whole PEL was scanned."""
        cursor = "0-0"
        for _ in range(100):
            reply = self.op(process, "xautoclaim", partial(self._xautoclaim, link, process, min_idle, cursor))
            if reply is None:
                return False
            self._ack(link, process, reply["entries"])
            cursor = reply.pop("cursor")
            if cursor == "0-0":
                return True
        return False

    def _drain(self, link: PrimaryLink, process: str) -> None:
        """Once the cluster is healed: read the group to its end and claim whatever is still
        pending (including other consumers' entries), so every entry is delivered once at least."""
        end = self.spec.deadline
        while self.now() < end:
            try:
                conn, node = link.get()
                read = self.op(process, "xreadgroup", partial(self._xreadgroup, conn, node, process, 100, None))
                if read is None:
                    raise NotSent("refused")
                self._ack(link, process, read["entries"])
                if not read["entries"] and self._claim(link, process, min_idle=0):
                    self.rec.record({"type": "meta", "f": "drained", "process": process})
                    return
            except (NotSent, redis.RedisError, OSError):
                link.drop()
                time.sleep(0.2)

    # -- readers -------------------------------------------------------------------------------

    def read(self, reader: dict[str, str]) -> None:
        process, node = reader["process"], reader["node"]
        host, port = self.spec.nodes[node]
        last = "0-0"
        conn: Connection | None = None
        while not self.draining():
            try:
                if conn is None:
                    conn = self.connect(host, port)
                reply = self.op(process, "xread", partial(self._xread, conn, node, last))
                if reply is None:
                    raise NotSent("refused")
                if reply["entries"]:
                    last = reply["entries"][-1][0]
            except (NotSent, redis.RedisError, OSError):
                if conn is not None:
                    conn.disconnect()
                conn = None
                time.sleep(0.2)
        if conn is not None:
            conn.disconnect()

    def _xread(self, conn: Connection, node: str, last: str) -> dict[str, Any]:
        reply = call(conn, "XREAD", "COUNT", 100, "BLOCK", 300, "STREAMS", self.spec.key, last)
        return {"node": node, "entries": stream_entries(reply)}


class PrimaryLink:
    """One connection to the primary, found through the sentinels (redis-py's `Sentinel`)."""

    def __init__(self, worker: Worker) -> None:
        self.worker = worker
        # No retries anywhere (redis-py's default retries a sentinel query 3 times with backoff
        # up to 10 s): a sentinel that does not answer within 0.5 s is skipped for the next one,
        # so what the history shows is the cluster's availability, not a client's retry policy.
        quick: dict[str, Any] = {"socket_timeout": 0.5, "socket_connect_timeout": 0.5, "retry": Retry(NoBackoff(), 0)}
        env = worker.spec.sentinel_password_env
        password = os.environ.get(env) if env else None
        self.sentinel = Sentinel(worker.spec.sentinels, sentinel_kwargs={**quick, "password": password or None},
                                 **quick)
        self.conn: Connection | None = None
        self.node: str | None = None

    def get(self) -> tuple[Connection, str]:
        if self.conn is None:
            try:
                host, port = self.sentinel.discover_master(self.worker.spec.service)
            except redis.RedisError as exc:
                raise NotSent(f"no primary: {exc}") from None
            self.conn = self.worker.connect(host, int(port))
            self.node = self.worker.names.get((host, int(port)), f"{host}:{port}")
        assert self.node is not None
        return self.conn, self.node

    def drop(self) -> None:
        if self.conn is not None:
            self.conn.disconnect()
        self.conn = None


def call(conn: Connection, *args: Any) -> Any:
    """Sends one command and reads its reply (an error reply is raised as ResponseError)."""
    conn.send_command(*args)
    return conn.read_response()


def stream_entries(reply: Any) -> list[list[str]]:
    """[id, value] pairs from an XREAD/XREADGROUP reply (one stream, field `v`)."""
    out: list[list[str]] = []
    streams = reply.items() if isinstance(reply, dict) else (reply or [])  # RESP3: a map, RESP2: pairs
    for _key, entries in streams:
        out.extend(_pairs(entries))
    return out


def _pairs(entries: Any) -> list[list[str]]:
    out = []
    for entry_id, fields in entries or []:
        if fields:  # a deleted entry still pending comes back with no fields
            values = dict(zip(fields[::2], fields[1::2]))
            out.append([str(entry_id), str(values.get("v"))])
    return out


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m chaos.workload SPEC.json", file=sys.stderr)
        return 2
    return 0 if Worker(Spec.load(args[0])).run() else 1


if __name__ == "__main__":
    sys.exit(main())

