"""`rill cluster`: a local replication cluster for trying Rill out — one primary and N
replicas (2 by default) as separate `rill node` processes on loopback, on consecutive RESP
ports from --port, and with --sentinels M as many `rill sentinel` processes on consecutive
ports from --sentinel-port, monitoring the primary as "rill" (quorum: a majority of them;
each starts knowing the others). It prints each process's address and role once the
replicas are in sync, and stops everything on Ctrl-C (or SIGTERM), or when one of them
exits — except a node watched by sentinels, whose death is theirs to handle. With
--metrics-port P every process serves Prometheus metrics (docs/metrics.md): the nodes on P and
the next ports, then the sentinels.
"""

from __future__ import annotations

import argparse
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

import hiredis

from node.log.encode import encode_command

_READY_TIMEOUT = 20.0
_STOP_TIMEOUT = 10.0


@dataclass
class _Node:
    port: int
    directory: str
    proc: subprocess.Popen[bytes]
    replicaof: int | None  # the primary's RESP port, for replicas
    metrics_port: int = 0  # 0: no metrics

    @property
    def log_path(self) -> str:
        return os.path.join(self.directory, "server.log")


def _call(port: int, *argv: str, timeout: float = 1.0) -> object:
    """One command over a fresh connection; None when the node does not answer."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
            sock.sendall(encode_command([a.encode() for a in argv]))
            reader = hiredis.Reader()
            while True:
                reply = reader.gets()
                if reply is not False:
                    return reply
                data = sock.recv(65536)
                if not data:
                    return None
                reader.feed(data)
    except OSError:
        return None


def _info(port: int) -> dict[str, str]:
    reply = _call(port, "INFO", "replication")
    if not isinstance(reply, bytes):
        return {}
    fields: dict[str, str] = {}
    for line in reply.decode("utf-8", "replace").splitlines():
        name, sep, value = line.partition(":")
        if sep:
            fields[name] = value
    return fields


def _start(port: int, directory: str, replicaof: int | None, metrics_port: int, extra: list[str]) -> _Node:
    os.makedirs(directory, exist_ok=True)
    args = [sys.executable, "-m", "node.main", "node", "--port", str(port), "--dir", directory,
            "--logfile", os.path.join(directory, "server.log"), *extra]
    if replicaof is not None:
        args += ["--replicaof", "127.0.0.1", str(replicaof)]
    if metrics_port:
        args += ["--metrics-port", str(metrics_port)]
    with open(os.path.join(directory, "stderr.log"), "wb") as stderr:
        proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=stderr, start_new_session=True)
    return _Node(port, directory, proc, replicaof, metrics_port)


SERVICE = "rill"  # the name the sentinels monitor the primary under


def _start_sentinels(base: str, first_port: int, count: int, primary: int, down_after: int,
                     first_metrics_port: int) -> list[_Node]:
    """`count` sentinels with known ids, each configured with the others (so they agree
    from the start, without waiting for hello messages); with metrics on consecutive ports
    from `first_metrics_port` unless it is 0."""
    ids = [secrets.token_hex(20) for _ in range(count)]
    ports = [first_port + i for i in range(count)]
    quorum = count // 2 + 1
    sentinels = []
    for i, (port, myid) in enumerate(zip(ports, ids)):
        directory = os.path.join(base, f"sentinel-{port}")
        os.makedirs(directory, exist_ok=True)
        lines = [
            f"port {port}", "bind 127.0.0.1", f'dir "{directory}"', f'logfile "{os.path.join(directory, "server.log")}"',
            f"sentinel myid {myid}",
            f"sentinel monitor {SERVICE} 127.0.0.1 {primary} {quorum}",
            f"sentinel down-after-milliseconds {SERVICE} {down_after}",
        ]
        metrics_port = first_metrics_port + i if first_metrics_port else 0
        if metrics_port:
            lines.append(f"metrics-port {metrics_port}")
        lines += [f"sentinel known-sentinel {SERVICE} 127.0.0.1 {p} {other}"
                  for j, (p, other) in enumerate(zip(ports, ids)) if j != i]
        conf = os.path.join(directory, "sentinel.conf")
        with open(conf, "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
        with open(os.path.join(directory, "stderr.log"), "wb") as stderr:
            proc = subprocess.Popen([sys.executable, "-m", "node.main", "sentinel", conf],
                                    stdout=subprocess.DEVNULL, stderr=stderr, start_new_session=True)
        sentinels.append(_Node(port, directory, proc, None, metrics_port))
    return sentinels


def _sentinels_ready(sentinels: list[_Node]) -> str | None:
    deadline = time.monotonic() + _READY_TIMEOUT
    while time.monotonic() < deadline:
        for node in sentinels:
            if node.proc.poll() is not None:
                return f"the sentinel on port {node.port} exited with code {node.proc.returncode} (see {node.directory})"
        if all(_call(node.port, "PING") == b"PONG" for node in sentinels):
            return None
        time.sleep(0.1)
    return f"the sentinels did not answer after {_READY_TIMEOUT:.0f}s"


def _describe_sentinels(sentinels: list[_Node]) -> str:
    lines = []
    for node in sentinels:
        reply = _call(node.port, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", SERVICE)
        primary = ":".join(x.decode() for x in reply) if isinstance(reply, list) else "?"
        lines.append(f"  127.0.0.1:{node.port:<6} sentinel  monitoring {SERVICE!r} (primary {primary})")
        lines.append(_where(node))
    return "\n".join(lines)


def _where(node: _Node) -> str:
    """The line under a process: its log, and its metrics when it serves them."""
    metrics = f"  metrics: http://127.0.0.1:{node.metrics_port}/metrics" if node.metrics_port else ""
    return f"  {'':<16} log: {node.log_path}{metrics}"


def _wait_ready(nodes: list[_Node]) -> str | None:
    """Until every node answers and every replica's link is up; the problem otherwise."""
    deadline = time.monotonic() + _READY_TIMEOUT
    while time.monotonic() < deadline:
        for node in nodes:
            if node.proc.poll() is not None:
                return f"the node on port {node.port} exited with code {node.proc.returncode} (see {node.directory})"
        states = [_info(node.port) for node in nodes]
        if all(s and (n.replicaof is None or s.get("master_link_status") == "up") for n, s in zip(nodes, states)):
            return None
        time.sleep(0.1)
    return f"the cluster was not in sync after {_READY_TIMEOUT:.0f}s (see the logs in {os.path.dirname(nodes[0].directory)})"


def _describe(nodes: list[_Node]) -> str:
    lines = []
    for node in nodes:
        info = _info(node.port)
        role = info.get("role", "?")
        where = f"127.0.0.1:{node.port}"
        if role == "master":
            detail = f"{info.get('connected_slaves', '?')} replica(s) connected"
        else:
            detail = f"replica of {info.get('master_host')}:{info.get('master_port')}, link {info.get('master_link_status')}"
        lines.append(f"  {where:<16} role={role:<7} replication port {info.get('repl_grpc_port', '?'):<6} {detail}")
        lines.append(_where(node))
    return "\n".join(lines)


def _stop(nodes: list[_Node]) -> None:
    for node in nodes:
        if node.proc.poll() is None:
            node.proc.terminate()
    deadline = time.monotonic() + _STOP_TIMEOUT
    for node in nodes:
        try:
            node.proc.wait(max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            node.proc.kill()
            node.proc.wait()


class _Stop(Exception):
    pass


def _raise_stop(signum: int, frame: object) -> None:
    # A second Ctrl-C must not interrupt stopping the nodes.
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)
    raise _Stop


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="rill cluster",
        description="Start a local cluster: one primary and its replicas on 127.0.0.1, on consecutive ports.",
        epilog="Arguments after -- are passed to every node (e.g. -- --appendonly yes).",
    )
    parser.add_argument("--port", type=int, default=6379, help="the primary's RESP port; replicas take the next ones")
    parser.add_argument("--replicas", type=int, default=2, help="number of replicas (default 2)")
    parser.add_argument("--sentinels", type=int, default=0, help="number of `rill sentinel` processes (default 0)")
    parser.add_argument("--sentinel-port", type=int, default=26379,
                        help="the first sentinel's port; the others take the next ones (default 26379)")
    parser.add_argument("--down-after", type=int, default=5000,
                        help="the sentinels' down-after-milliseconds (default 5000)")
    parser.add_argument("--metrics-port", type=int, default=0,
                        help="serve Prometheus metrics: the nodes on this port and the next ones, then the "
                             "sentinels (default 0: off)")
    parser.add_argument("--dir", default=None, help="data directory (default: a temporary one, removed on exit)")
    parser.add_argument("node_args", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    extra = args.node_args[1:] if args.node_args[:1] == ["--"] else args.node_args
    if args.replicas < 0 or not 0 < args.port <= 65535 - args.replicas:
        parser.error("--port and --replicas must leave every port in 1..65535")
    if args.sentinels < 0 or (args.sentinels and not 0 < args.sentinel_port <= 65536 - args.sentinels):
        parser.error("--sentinel-port and --sentinels must leave every port in 1..65535")
    if args.down_after <= 0:
        parser.error("--down-after must be positive")
    node_ports = set(range(args.port, args.port + args.replicas + 1))
    # A node's replication listens on its RESP port + 10000 by default.
    taken = node_ports | {p + 10000 for p in node_ports}
    sentinel_ports = set(range(args.sentinel_port, args.sentinel_port + args.sentinels))
    if taken & sentinel_ports:
        parser.error("the sentinels' ports would collide with the nodes' RESP or replication ports")
    processes = len(node_ports) + args.sentinels
    if args.metrics_port and not 0 < args.metrics_port <= 65536 - processes:
        parser.error("--metrics-port must leave every metrics port in 1..65535")
    if args.metrics_port and set(range(args.metrics_port, args.metrics_port + processes)) & (taken | sentinel_ports):
        parser.error("the metrics ports would collide with the nodes' or sentinels' ports")
    base = args.dir or tempfile.mkdtemp(prefix="rill-cluster-")
    nodes: list[_Node] = []
    sentinels: list[_Node] = []
    previous = {sig: signal.signal(sig, _raise_stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        def metrics_port(i: int) -> int:
            return args.metrics_port + i if args.metrics_port else 0

        nodes.append(_start(args.port, os.path.join(base, str(args.port)), None, metrics_port(0), extra))
        for i in range(1, args.replicas + 1):
            port = args.port + i
            nodes.append(_start(port, os.path.join(base, str(port)), args.port, metrics_port(i), extra))
        problem = _wait_ready(nodes)
        if problem is not None:
            print(f"rill cluster: {problem}", file=sys.stderr)
            return 1
        if args.sentinels:
            sentinels = _start_sentinels(base, args.sentinel_port, args.sentinels, args.port, args.down_after,
                                         metrics_port(len(nodes)))
            problem = _sentinels_ready(sentinels)
            if problem is not None:
                print(f"rill cluster: {problem}", file=sys.stderr)
                return 1
        watching = f", {args.sentinels} sentinel(s)" if args.sentinels else ""
        print(f"Rill local cluster: 1 primary, {args.replicas} replica(s){watching}. Ctrl-C stops them all.")
        print(_describe(nodes))
        if sentinels:
            print(_describe_sentinels(sentinels))
        if sentinels:
            print(f"Try: redis-cli -p {args.sentinel_port} SENTINEL GET-MASTER-ADDR-BY-NAME {SERVICE}; "
                  f"redis-cli -p {args.port} XADD s '*' f v")
        else:
            print(f"Try: redis-cli -p {args.port} XADD s '*' f v; "
                  f"redis-cli -p {args.port + 1 if args.replicas else args.port} XRANGE s - +")
        sys.stdout.flush()
        gone: set[int] = set()
        while True:
            for node in nodes + sentinels:
                if node.proc.poll() is None or node.port in gone:
                    continue
                what = "sentinel" if node in sentinels else "node"
                if what == "node" and sentinels:
                    # Watched by sentinels, a node that dies is what they are there for.
                    gone.add(node.port)
                    print(f"rill cluster: the node on port {node.port} exited with code {node.proc.returncode}; "
                          "the sentinels will fail over if it was the primary", file=sys.stderr, flush=True)
                    continue
                print(f"rill cluster: the {what} on port {node.port} exited with code {node.proc.returncode}; "
                      "stopping the others", file=sys.stderr)
                return 1
            time.sleep(0.2)
    except _Stop:
        print("\nStopping the cluster...")
        return 0
    finally:
        # Stop the nodes before the usual signal handlers come back: another Ctrl-C (or the
        # one make forwards) must not interrupt the stop and leave nodes running.
        for sig in previous:
            signal.signal(sig, signal.SIG_IGN)
        _stop(sentinels)  # first: no failover while the nodes stop
        _stop(nodes)
        if args.dir is None:
            shutil.rmtree(base, ignore_errors=True)
        for sig, handler in previous.items():
            signal.signal(sig, handler)
