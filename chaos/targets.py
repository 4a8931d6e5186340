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
from dataclasses import dataclass, replace

SERVICE = "rill"  # the name sentinels monitor the primary under
NODE_PORT = 6379  # every member has its own namespace, so the usual ports never clash
SENTINEL_PORT = 26379
RILL_REPL_OFFSET = 10000  # a Rill node's gRPC replication port is its RESP port + 10000


@dataclass(frozen=True)
class Target:
    name: str
    title: str
    node: str  # "redis" (redis-server) or "rill" (`rill node`)
    sentinel: str  # "redis" (redis-sentinel) or "rill" (`rill sentinel`)
    fenced: bool = False  # fenced mode's directives on nodes and sentinels, from the Settings


TARGETS: dict[str, Target] = {
    "redis": Target("redis", "redis-server + redis-sentinel", node="redis", sentinel="redis"),
    "rill-redis-sentinel": Target("rill-redis-sentinel", "Rill nodes + redis-sentinel", node="rill", sentinel="redis"),
    "rill": Target("rill", "Rill nodes + rill sentinel", node="rill", sentinel="rill"),
    "fenced": Target("fenced", "Rill in fenced mode", node="rill", sentinel="rill", fenced=True),
}


# Targets the lab does not start: a deployment the user brought up (chaos.deployment), driven
# where the lab can reach it; the faults it cannot apply there are reported as not applied.
DEPLOYMENT_TARGETS: dict[str, str] = {
    "compose": "your compose cluster (deploy/)",
    "deployment": "your deployment (--deployment FILE)",
}


@dataclass(frozen=True)
class Settings:
    """The cluster's knobs: a scenario sets some, a user any (`rill chaos run --options FILE`
    or the flags named in `OPTIONS`)."""

    nodes: int = 5
    appendfsync: str = "everysec"
    down_after_ms: int = 2000
    # Short, so that a split vote (every sentinel sees the primary fail in the same instant and
    # votes for itself) is retried within a fault's window: the retry waits 2 x this.
    failover_timeout_ms: int = 4000
    quorum: int = 2
    min_replicas_to_write: int = 0
    min_replicas_max_lag: int = 10
    lease_ms: int = 1000  # fenced mode: the nodes' and the sentinels' lease (they must be the same)
    clock_drift_permille: int = 50  # fenced mode: the sentinels' bound on clock rate errors
    disk_nemesis: int = 0  # 1: each node's dir on the disk nemesis' filesystem (chaos/diskfs.py)


# The settings a user may set, with what they mean (the CLI's flags and the options file's keys).
OPTIONS: dict[str, str] = {
    "nodes": "data nodes (N: the primary and N-1 replicas; at least 3)",
    "appendfsync": "the nodes' appendfsync: always, everysec or no",
    "down_after_ms": "sentinel down-after-milliseconds",
    "failover_timeout_ms": "sentinel failover-timeout",
    "quorum": "sentinel quorum (of 3 sentinels)",
    "min_replicas_to_write": "the nodes' min-replicas-to-write",
    "min_replicas_max_lag": "the nodes' min-replicas-max-lag",
    "lease_ms": "fenced mode: fenced-lease-milliseconds of the nodes and the sentinels",
    "clock_drift_permille": "fenced mode: sentinel fenced-clock-drift-permille",
    "disk_nemesis": "1: put each node's dir on the lab's FUSE filesystem (power loss, full disk, EIO)",
}


def settings_with(base: Settings, overrides: dict[str, object]) -> Settings:
    """`base` with a user's overrides (names from OPTIONS, dashes or underscores), checked."""
    values: dict[str, object] = {}
    for key, value in overrides.items():
        name = key.replace("-", "_")
        if name not in OPTIONS:
            raise ValueError(f"unknown setting {key!r} (settings: {', '.join(sorted(OPTIONS))})")
        if name == "appendfsync":
            if value not in ("always", "everysec", "no"):
                raise ValueError(f"appendfsync must be always, everysec or no, not {value!r}")
            values[name] = str(value)
            continue
        try:
            number = int(str(value))
        except ValueError:
            raise ValueError(f"{key} must be a whole number, not {value!r}") from None
        if number < 0 or (name == "nodes" and not 3 <= number <= 9) or (name == "quorum" and not 1 <= number <= 3):
            raise ValueError(f"{key} = {number} is out of range ({OPTIONS[name]})")
        values[name] = number
    return replace(base, **values)  # type: ignore[arg-type]


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
                primary: tuple[str, int] | None, data_dir: str | None = None) -> str:
    """A node's config file. It binds its real address (what the proxies forward to) and its
    announced one (a Rill node serves RESP and replication on both), and announces the
    latter to its primary so sentinels and replicas use the proxied path."""
    pairs = [
        ("port", str(NODE_PORT)),
        ("bind", f"{real_ip} {announced_ip}"),
        ("dir", data_dir or workdir),
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
    if target.fenced:
        # docs/safety.md, *Fenced mode*: the replica set is the lab's nodes; the nodes' lease
        # and the sentinels' must be the same.
        pairs += [("fenced-mode", "yes"), ("fenced-replica-set-size", str(settings.nodes)),
                  ("fenced-lease-milliseconds", str(settings.lease_ms))]
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
    if target.fenced:
        pairs += [("sentinel fenced-mode", f"{SERVICE} yes"),
                  ("sentinel fenced-lease-milliseconds", f"{SERVICE} {settings.lease_ms}"),
                  ("sentinel fenced-clock-drift-permille", str(settings.clock_drift_permille))]
    return _lines(pairs)
