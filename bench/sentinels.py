"""`python -m bench.sentinels` (`python -m bench --suite sentinels`): failover time and idle cost
of `rill sentinel` side by side with Debian's redis-sentinel, over the same kind of nodes with
the same settings. (The `failover` suite compares the nodes instead: redis-sentinel managing
Rill nodes vs redis-server.)

* **Failover time**: three sentinels (quorum 2) watch a primary with two replicas. A writer
  client finds the primary the way a Sentinel client does (SENTINEL GET-MASTER-ADDR-BY-NAME,
  asking the sentinels in turn) and sends XADD every few milliseconds; then the primary gets
  SIGKILL (`kill`) or SIGSTOP (`stop`). The failover time is from the signal to the first
  XADD acknowledged by another node — what an application sees. The time of the first
  `+switch-master` any sentinel published is recorded too (the promotion). Every round starts
  a fresh cluster; rounds alternate between the sentinel kinds so both meet the same
  machine load. Figures are medians over `--rounds`.
* **Idle cost**: a settled cluster of three sentinels with nothing failing for
  `--idle-seconds`: CPU time each sentinel used (ms per second, the mean of the three) and
  its resident memory.

Results go to bench/results/sentinels/latest.json and a line of history.jsonl. The target (issue 23)
is a Rill failover time no more than redis-sentinel's + 1 s at the same
down-after-milliseconds.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import statistics
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import hiredis

from bench.client import RespClient, encode
from bench.cluster import Launcher
from bench.procs import ROOT, BenchError, Server, install_exit_handlers
from bench.report import write_json

SERVICE = "bench"
KINDS = ("redis", "rill")
FAULTS = ("kill", "stop")
_SETTLE_TIMEOUT = 60.0
_FAILOVER_TIMEOUT = 90.0
_START_TIMEOUT = 20.0  # until a node or sentinel answers PING
_STOP_TIMEOUT = 15.0  # a graceful stop, before SIGKILL


@dataclass(frozen=True)
class Settings:
    down_after_ms: int = 2000
    failover_timeout_ms: int = 4000
    quorum: int = 2
    sentinels: int = 3
    replicas: int = 2


# -- processes -----------------------------------------------------------------------------------

def start_node(launcher: Launcher, name: str, node_kind: str, replicaof: int | None) -> Server:
    member = launcher.add(name, node_kind)
    follow = ["--replicaof", "127.0.0.1", str(replicaof)] if replicaof is not None else []
    log = ["--logfile", member.logfile]
    if node_kind == "redis":
        args = ["--port", str(member.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                "--repl-diskless-sync-delay", "0", "--dir", member.dir, *log, *follow]
    else:
        args = ["--port", str(member.port), "--dir", member.dir, *log, *follow]
    return member.start(args, timeout=_START_TIMEOUT)


def sentinel_conf(port: int, workdir: str, primary: int, s: Settings) -> str:
    return (
        f"port {port}\nbind 127.0.0.1\ndir {workdir}\nlogfile {os.path.join(workdir, 'sentinel.log')}\n"
        f"sentinel monitor {SERVICE} 127.0.0.1 {primary} {s.quorum}\n"
        f"sentinel down-after-milliseconds {SERVICE} {s.down_after_ms}\n"
        f"sentinel failover-timeout {SERVICE} {s.failover_timeout_ms}\n"
    )


def start_sentinel(launcher: Launcher, name: str, kind: str, primary: int, s: Settings) -> Server:
    member = launcher.add(name, f"{kind}-sentinel")
    member.write_conf(sentinel_conf(member.port, member.dir, primary, s))
    return member.start(timeout=_START_TIMEOUT)


def _fields(reply: object) -> dict[str, str]:
    if not isinstance(reply, list):
        return {}
    items = [x.decode() if isinstance(x, bytes) else str(x) for x in reply]
    return dict(zip(items[::2], items[1::2]))


def _call(port: int, *argv: str, timeout: float = 1.0) -> object:
    try:
        with RespClient(port, timeout=timeout) as client:
            return client.call(*argv)
    except OSError:
        return None


@dataclass
class Cluster:
    """The nodes ("n0" the primary) and sentinels ("s0", ...) of one bench.cluster.Launcher."""

    launcher: Launcher
    nodes: list[Server] = field(default_factory=list)
    sentinels: list[Server] = field(default_factory=list)

    @property
    def primary(self) -> Server:
        return self.nodes[0]

    def stop(self) -> None:
        self.launcher.close(_STOP_TIMEOUT)


def start_cluster(kind: str, node_kind: str, s: Settings) -> Cluster:
    cluster = Cluster(Launcher(prefix=f"bench-sentinels-{kind}-"))
    try:
        cluster.nodes.append(start_node(cluster.launcher, "n0", node_kind, None))
        for i in range(s.replicas):
            cluster.nodes.append(start_node(cluster.launcher, f"n{i + 1}", node_kind, cluster.primary.port))
        _wait(lambda: _replicas_online(cluster), "the replicas to sync")
        for i in range(s.sentinels):
            cluster.sentinels.append(start_sentinel(cluster.launcher, f"s{i}", kind, cluster.primary.port, s))
        _wait(lambda: all(_settled(x.port, s) for x in cluster.sentinels), "the sentinels to discover each other")
    except BaseException:
        cluster.stop()
        raise
    return cluster


def _replicas_online(cluster: Cluster) -> bool:
    info = _call(cluster.primary.port, "INFO", "replication")
    if not isinstance(info, bytes):
        return False
    return info.count(b"state=online") == len(cluster.nodes) - 1


def _settled(port: int, s: Settings) -> bool:
    fields = _fields(_call(port, "SENTINEL", "MASTER", SERVICE))
    return (
        fields.get("num-slaves") == str(s.replicas)
        and fields.get("num-other-sentinels") == str(s.sentinels - 1)
        and fields.get("flags") == "master"
    )


def _wait(predicate: Any, what: str, timeout: float = _SETTLE_TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise BenchError(f"timed out after {timeout:.0f} s waiting for {what}")


# -- the writer --------------------------------------------------------------------------------

class Writer(threading.Thread):
    """A client that keeps appending to a stream on whatever node the sentinels name."""

    def __init__(self, sentinels: list[int], interval: float = 0.005) -> None:
        super().__init__(name="writer", daemon=True)
        self.sentinels = sentinels
        self.interval = interval
        self.acks: list[tuple[float, int]] = []  # (time.monotonic(), port) of each acknowledged XADD
        self._halt = threading.Event()

    def stop(self) -> None:
        self._halt.set()
        self.join(10)

    def _primary(self) -> int | None:
        for port in self.sentinels:
            reply = _call(port, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", SERVICE, timeout=0.5)
            if isinstance(reply, list) and len(reply) == 2:
                return int(reply[1])
        return None

    def run(self) -> None:
        sock: socket.socket | None = None
        port = None
        while not self._halt.is_set():
            try:
                if sock is None:
                    port = self._primary()
                    if port is None:
                        time.sleep(self.interval)
                        continue
                    sock = socket.create_connection(("127.0.0.1", port), timeout=0.5)
                sock.sendall(encode(["XADD", "bench-failover", "*", "f", "v"]))
                reader = hiredis.Reader()
                reply: object = False
                while reply is False:
                    data = sock.recv(4096)
                    if not data:
                        raise ConnectionError("closed")
                    reader.feed(data)
                    reply = reader.gets()
                if isinstance(reply, hiredis.ReplyError):
                    raise ConnectionError(str(reply))  # READONLY: a demoted node, ask again
                assert port is not None
                self.acks.append((time.monotonic(), port))
                time.sleep(self.interval)
            except OSError:
                if sock is not None:
                    sock.close()
                sock = None
                time.sleep(self.interval)
        if sock is not None:
            sock.close()


class SwitchWatcher(threading.Thread):
    """The time of the first +switch-master a sentinel publishes."""

    def __init__(self, port: int) -> None:
        super().__init__(name=f"switch-{port}", daemon=True)
        self.port = port
        self.when: float | None = None
        self.ready = threading.Event()
        self._sock = socket.create_connection(("127.0.0.1", port), timeout=_FAILOVER_TIMEOUT)

    def run(self) -> None:
        reader = hiredis.Reader()
        try:
            self._sock.sendall(encode(["SUBSCRIBE", "+switch-master"]))
            while self.when is None:
                data = self._sock.recv(65536)
                if not data:
                    return
                reader.feed(data)
                while (msg := reader.gets()) is not False:
                    if isinstance(msg, list) and msg and msg[0] == b"subscribe":
                        self.ready.set()
                    elif isinstance(msg, list) and msg and msg[0] == b"message":
                        self.when = time.monotonic()
        except OSError:
            return
        finally:
            self.ready.set()

    def close(self) -> None:
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._sock.close()
        self.join(5)


# -- the measurements ----------------------------------------------------------------------------

def failover_round(kind: str, node_kind: str, fault: str, s: Settings) -> dict[str, Any]:
    cluster = start_cluster(kind, node_kind, s)
    watchers = [SwitchWatcher(x.port) for x in cluster.sentinels]
    writer = Writer([x.port for x in cluster.sentinels])
    try:
        for w in watchers:
            w.start()
            w.ready.wait(5)
        writer.start()
        _wait(lambda: len(writer.acks) > 20, "the writer's first writes")
        old = cluster.primary.port
        fault_time = time.monotonic()
        os.kill(cluster.primary.pid, signal.SIGKILL if fault == "kill" else signal.SIGSTOP)
        deadline = fault_time + _FAILOVER_TIMEOUT
        first: tuple[float, int] | None = None
        while first is None and time.monotonic() < deadline:
            time.sleep(0.02)
            first = next(((t, p) for t, p in writer.acks if t > fault_time and p != old), None)
        if first is None:
            raise BenchError(f"{kind} sentinels: no write acknowledged by another node {_FAILOVER_TIMEOUT:.0f} s "
                             f"after the {fault}")
        switches = [w.when for w in watchers if w.when is not None]
        return {
            "sentinel": kind, "fault": fault,
            "failover_s": round(first[0] - fault_time, 3),
            "switch_master_s": round(min(switches) - fault_time, 3) if switches else None,
        }
    finally:
        writer.stop()
        for w in watchers:
            w.close()
        cluster.stop()


def idle_cost(kind: str, node_kind: str, s: Settings, seconds: float) -> dict[str, Any]:
    cluster = start_cluster(kind, node_kind, s)
    try:
        time.sleep(2.0)  # past start-up work (first INFO, config rewrites)
        before = [x.cpu_seconds() for x in cluster.sentinels]
        time.sleep(seconds)
        after = [x.cpu_seconds() for x in cluster.sentinels]
        rss = [x.rss_bytes() for x in cluster.sentinels]
    finally:
        cluster.stop()
    per_second = [(b - a) * 1000 / seconds for a, b in zip(before, after)]
    return {
        "sentinel": kind,
        "cpu_ms_per_s": round(statistics.mean(per_second), 2),
        "rss_mib": round(statistics.mean(rss) / (1 << 20), 1),
    }


def summarize(rounds: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for fault in FAULTS:
        row: dict[str, Any] = {"fault": fault}
        for kind in KINDS:
            times = [r["failover_s"] for r in rounds if r["sentinel"] == kind and r["fault"] == fault]
            switches = [r["switch_master_s"] for r in rounds
                        if r["sentinel"] == kind and r["fault"] == fault and r["switch_master_s"] is not None]
            if times:
                row[kind] = {"failover_s_median": round(statistics.median(times), 3), "failover_s": times,
                             "switch_master_s_median": round(statistics.median(switches), 3) if switches else None}
        if "redis" in row and "rill" in row:
            row["rill_minus_redis_s"] = round(row["rill"]["failover_s_median"] - row["redis"]["failover_s_median"], 3)
        if len(row) > 1:
            out.append(row)
    return out


def table(summary: list[dict[str, Any]], idle: list[dict[str, Any]]) -> str:
    lines = ["fault  sentinel         failover s (median)  +switch-master s  rounds"]
    for row in summary:
        for kind in KINDS:
            if kind in row:
                r = row[kind]
                sw = "-" if r["switch_master_s_median"] is None else f"{r['switch_master_s_median']:.2f}"
                lines.append(f"{row['fault']:<6} {kind + '-sentinel':<16} {r['failover_s_median']:>19.2f}  "
                             f"{sw:>16}  {' '.join(f'{t:.2f}' for t in r['failover_s'])}")
        if "rill_minus_redis_s" in row:
            lines.append(f"{row['fault']:<6} rill - redis     {row['rill_minus_redis_s']:>+19.2f}")
    if idle:
        lines.append("")
        lines.append("idle sentinel    CPU ms/s   RSS MiB")
        for entry in idle:
            lines.append(f"{entry['sentinel'] + '-sentinel':<16} {entry['cpu_ms_per_s']:>8.2f}  {entry['rss_mib']:>8.1f}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.sentinels", description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="failovers per sentinel kind and fault (default 3)")
    parser.add_argument("--faults", default="kill,stop", help="kill, stop or both (default: %(default)s)")
    parser.add_argument("--sentinels", default="redis,rill", help="sentinel kinds (default: %(default)s)")
    parser.add_argument("--nodes", default="redis", choices=("redis", "rill"), help="node kind (default: redis)")
    parser.add_argument("--down-after", type=int, default=Settings.down_after_ms, help="down-after-milliseconds")
    parser.add_argument("--failover-timeout", type=int, default=Settings.failover_timeout_ms)
    parser.add_argument("--idle-seconds", type=float, default=20.0, help="0 skips the idle measurement")
    parser.add_argument("--quick", action="store_true", help="1 round of kill, 3 s idle")
    parser.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "sentinels"))
    args = parser.parse_args(argv)
    kinds = [k for k in args.sentinels.split(",") if k]
    faults = [f for f in args.faults.split(",") if f]
    if any(k not in KINDS for k in kinds) or any(f not in FAULTS for f in faults) or args.rounds <= 0:
        parser.error("unknown sentinel kind or fault, or no rounds")
    if args.quick:
        args.rounds, faults, args.idle_seconds = 1, ["kill"], 3.0
    settings = Settings(down_after_ms=args.down_after, failover_timeout_ms=args.failover_timeout)
    install_exit_handlers()
    started = time.time()
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(started))
    rounds: list[dict[str, Any]] = []
    idle: list[dict[str, Any]] = []
    try:
        for i in range(args.rounds):
            for fault in faults:
                # Alternate which kind goes first, so neither always meets the same load.
                for kind in kinds if i % 2 == 0 else reversed(kinds):
                    result = failover_round(kind, args.nodes, fault, settings)
                    print(f"round {i + 1} {fault} {kind}-sentinel: {result['failover_s']:.2f} s", file=sys.stderr,
                          flush=True)
                    rounds.append(result)
        if args.idle_seconds > 0:
            for kind in kinds:
                idle.append(idle_cost(kind, args.nodes, settings, args.idle_seconds))
    except BenchError as exc:
        print(f"benchmark aborted: {exc}", file=sys.stderr)
        return 1
    summary = summarize(rounds)
    document = {
        "timestamp": stamp,
        "duration_s": round(time.time() - started, 1),
        "params": {"rounds": args.rounds, "faults": faults, "nodes": args.nodes,
                   "down_after_ms": settings.down_after_ms, "failover_timeout_ms": settings.failover_timeout_ms,
                   "quorum": settings.quorum, "sentinels": settings.sentinels, "replicas": settings.replicas,
                   "idle_seconds": args.idle_seconds, "cpus": os.cpu_count()},
        "summary": summary,
        "idle": idle,
        "rows": rounds,
    }
    print(table(summary, idle))
    for path in write_json(document, args.out, stamp):
        print(f"wrote {os.path.relpath(path)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
