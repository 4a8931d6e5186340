"""What the lab runs a scenario against: which program is a node, which is a sentinel, their
configuration files, and whether the target can run on this machine.

Every target is one row of `TARGETS`. Nodes and sentinels are black boxes started from a config
file in Redis's syntax (redis.conf / sentinel.conf), which redis-server, redis-sentinel, `rill
node` and `rill sentinel` all read. A target whose programs are not installed is reported as
"not available: <reason>" and runs nothing.
"""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import dataclass

SERVICE = "rill"  # the name sentinels monitor the primary under
NODE_PORT = 6379  # every member has its own namespace, so the usual ports never clash
SENTINEL_PORT = 26379
RILL_REPL_OFFSET = 10000  # a Rill node's gRPC replication port is its RESP port + 10000
FENCED_SET_SIZE = 5  # the lab's nodes (chaos/scenarios.py: Scenario.nodes)
FENCED_LEASE_MS = 1000


@dataclass(frozen=True)
class Target:
    name: str
    title: str
    node: str  # "redis" (redis-server) or "rill" (`rill node`)
    sentinel: str  # "redis" (redis-sentinel) or "rill" (`rill sentinel`)
    node_directives: tuple[tuple[str, str], ...] = ()  # appended to every node's config
    sentinel_directives: tuple[tuple[str, str], ...] = ()  # appended to every sentinel's config


TARGETS: dict[str, Target] = {
    "redis": Target("redis", "redis-server + redis-sentinel", node="redis", sentinel="redis"),
    "rill-redis-sentinel": Target("rill-redis-sentinel", "Rill nodes + redis-sentinel", node="rill", sentinel="redis"),
    "rill": Target("rill", "Rill nodes + rill sentinel", node="rill", sentinel="rill"),
    "fenced": Target(
        "fenced", "Rill in fenced mode", node="rill", sentinel="rill",
        # docs/safety.md, *Fenced mode*: the replica set is the lab's five nodes; the nodes'
        # lease and the sentinels' must be the same.
        node_directives=(("fenced-mode", "yes"), ("fenced-replica-set-size", str(FENCED_SET_SIZE)),
                         ("fenced-lease-milliseconds", str(FENCED_LEASE_MS))),
        sentinel_directives=(("sentinel fenced-mode", f"{SERVICE} yes"),
                             ("sentinel fenced-lease-milliseconds", f"{SERVICE} {FENCED_LEASE_MS}")),
    ),
}


@dataclass(frozen=True)
class Settings:
    """The cluster's knobs a scenario sets."""

    appendfsync: str = "everysec"
    down_after_ms: int = 2000
    # Short, so that a split vote (every sentinel sees the primary fail in the same instant and
    # votes for itself) is retried within a fault's window: the retry waits 2 x this.
    failover_timeout_ms: int = 4000
    quorum: int = 2
    min_replicas_to_write: int = 0
    min_replicas_max_lag: int = 10


def rill_binary() -> str:
    here = os.path.join(os.path.dirname(sys.executable), "rill")
    return here if os.access(here, os.X_OK) else (shutil.which("rill") or "rill")


def availability(target: Target) -> str | None:
    """Why the target cannot run here (None: it can)."""
    needed = {"redis": "redis-server"}.get(target.node), {"redis": "redis-sentinel"}.get(target.sentinel)
    for program in needed:
        if program and shutil.which(program) is None:
            return f"{program} is not installed (`make chaos-deps` installs it)"
    if "rill" in (target.node, target.sentinel) and shutil.which(rill_binary()) is None:
        return "the `rill` command is not installed (`make deps`)"
    return None


def node_ports(target: Target) -> tuple[int, ...]:
    """The ports a node listens on: RESP, and for Rill its gRPC replication port too (a
    replica's link to its primary goes through a proxy like everything else)."""
    return (NODE_PORT, NODE_PORT + RILL_REPL_OFFSET) if target.node == "rill" else (NODE_PORT,)


def node_argv(target: Target, conf: str) -> list[str]:
    if target.node == "redis":
        return [shutil.which("redis-server") or "redis-server", conf]
    return [rill_binary(), "node", conf]


def sentinel_argv(target: Target, conf: str) -> list[str]:
    if target.sentinel == "redis":
        return [shutil.which("redis-sentinel") or "redis-sentinel", conf]
    return [rill_binary(), "sentinel", conf]


def _lines(pairs: list[tuple[str, str]]) -> str:
    return "".join(f"{name} {value}\n" for name, value in pairs)


def node_config(target: Target, settings: Settings, real_ip: str, announced_ip: str, workdir: str,
                primary: tuple[str, int] | None) -> str:
    """A node's config file. It binds its real address (what the proxies forward to) and its
    announced one (a Rill node serves RESP and replication on both), and announces the
    latter to its primary so sentinels and replicas use the proxied path."""
    pairs = [
        ("port", str(NODE_PORT)),
        ("bind", f"{real_ip} {announced_ip}"),
        ("dir", workdir),
        ("logfile", os.path.join(workdir, "node.log")),
        ("protected-mode", "no"),
        ("appendonly", "yes"),
        ("appendfsync", settings.appendfsync),
        ("replica-announce-ip", announced_ip),
        ("min-replicas-to-write", str(settings.min_replicas_to_write)),
        ("min-replicas-max-lag", str(settings.min_replicas_max_lag)),
    ]
    if target.node == "redis":
        # No RDB snapshots; full syncs stream straight over the socket without waiting.
        pairs += [("save", '""'), ("repl-diskless-sync", "yes"), ("repl-diskless-sync-delay", "0")]
    else:
        pairs += [("repl-port", str(NODE_PORT + RILL_REPL_OFFSET))]
    if primary is not None:
        pairs.append(("replicaof", f"{primary[0]} {primary[1]}"))
    pairs += list(target.node_directives)
    return _lines(pairs)


def sentinel_config(target: Target, settings: Settings, real_ip: str, announced_ip: str, workdir: str,
                    primary: tuple[str, int]) -> str:
    pairs = [
        ("port", str(SENTINEL_PORT)),
        ("bind", f"{real_ip} {announced_ip}"),
        ("dir", workdir),
        ("logfile", os.path.join(workdir, "sentinel.log")),
        ("protected-mode", "no"),
        ("sentinel announce-ip", announced_ip),
        ("sentinel monitor", f"{SERVICE} {primary[0]} {primary[1]} {settings.quorum}"),
        ("sentinel down-after-milliseconds", f"{SERVICE} {settings.down_after_ms}"),
        ("sentinel failover-timeout", f"{SERVICE} {settings.failover_timeout_ms}"),
        ("sentinel parallel-syncs", f"{SERVICE} 4"),
    ]
    pairs += list(target.sentinel_directives)
    return _lines(pairs)
