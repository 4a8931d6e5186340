"""ROLE and the replication figures of INFO (the replication section, INFO stats' sync
counters, INFO memory's backlog), with Redis 7.2's fields in its order, then Rill's
replication port (and on a replica how many batches it applied in slices)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from node.replication.discovery import INFO_PORT_FIELD

if TYPE_CHECKING:
    from node.config import Config
    from node.replication.backlog_feed import BacklogFeed
    from node.replication.fencing import Fencing
    from node.replication.planned_failover import Failover
    from node.replication.redis_link import RedisReplicaLink
    from node.server.server import Server
    from replication import Backlog, Primary, ReplicaLink


class Replication(Protocol):
    """What ROLE and INFO read of the node's replication side (node/replication/role.py's
    `ReplicationNode`)."""

    @property
    def server(self) -> Server: ...
    @property
    def config(self) -> Config: ...
    @property
    def backlog(self) -> Backlog | None: ...
    @property
    def feed(self) -> BacklogFeed: ...
    @property
    def primary(self) -> Primary | None: ...
    @property
    def link(self) -> ReplicaLink | RedisReplicaLink | None: ...
    @property
    def master(self) -> tuple[str, int] | None: ...
    @property
    def repl_port(self) -> int: ...
    @property
    def fencing(self) -> Fencing: ...
    @property
    def failover(self) -> Failover: ...
    def end_offset(self) -> int: ...


def _link_state(repl: Replication) -> str:
    """ROLE's replica state (connect, connecting, sync, connected)."""
    link = repl.link
    if link is None:
        return "connect"
    status = link.status()
    if status.link_up:
        return "connected"
    return "sync" if status.sync_in_progress else "connecting"


def role_reply(repl: Replication) -> list[Any]:
    """ROLE."""
    offset = repl.end_offset()
    if repl.server.role == "master":
        replicas = repl.primary.registry.replicas() if repl.primary is not None else []
        return [b"master", offset, [
            [r.host.encode(), str(r.port).encode(), str(r.offset).encode()]
            for r in replicas if r.state == "online"
        ]]
    host, port = repl.master if repl.master is not None else ("", 0)
    status = repl.link.status() if repl.link is not None else None
    up = status is not None and status.link_up
    # The link's offset: the node's log end, or a Redis primary's offset (redis_link.py).
    return [b"slave", host.encode(), port, _link_state(repl).encode(), status.offset if status is not None and up else -1]


def info_fields(repl: Replication) -> list[tuple[str, object]]:
    """INFO replication, Redis 7.2's fields in its order, then Rill's replication port (and
    on a replica how many batches it applied in slices)."""
    end = repl.end_offset()
    server = repl.server
    fields: list[tuple[str, object]] = [("role", server.role)]
    if server.role == "slave":
        fields += _replica_fields(repl)
    replicas = repl.primary.registry.replicas() if repl.primary is not None else []
    fields.append(("connected_slaves", len(replicas)))
    if repl.config.get_int("min-replicas-to-write") and repl.config.get_int("min-replicas-max-lag"):
        good = repl.primary.waits.good_replicas(float(repl.config.get_int("min-replicas-max-lag"))) if repl.primary else 0
        fields.append(("min_slaves_good_slaves", good))
    for i, r in enumerate(replicas):
        fields.append((f"slave{i}", f"ip={r.host},port={r.port},state={r.state},offset={r.offset},lag={int(r.lag)}"))
    fields.append(("master_failover_state", repl.failover.state))
    backlog = repl.backlog
    if backlog is not None:
        info = backlog.info()
        fields += [
            ("master_replid", info.master_replid),
            ("master_replid2", info.master_replid2),
            ("master_repl_offset", info.master_repl_offset),
            ("second_repl_offset", info.second_repl_offset),
            ("repl_backlog_active", info.repl_backlog_active if repl.feed.recording else 0),
            ("repl_backlog_size", info.repl_backlog_size),
            ("repl_backlog_first_byte_offset", info.repl_backlog_first_byte_offset if repl.feed.recording else 0),
            ("repl_backlog_histlen", info.repl_backlog_histlen),
        ]
    else:
        effects = server.effects
        fields += [
            ("master_replid", effects.replid),
            ("master_replid2", effects.replid2),
            ("master_repl_offset", end),
            ("second_repl_offset", effects.second_offset + 1 if effects.second_offset >= 0 else -1),
            ("repl_backlog_active", 0),
            ("repl_backlog_size", repl.config.get_int("repl-backlog-size")),
            ("repl_backlog_first_byte_offset", 0),
            ("repl_backlog_histlen", 0),
        ]
    fields.append((INFO_PORT_FIELD, repl.repl_port))
    fields += repl.fencing.info_fields(end, server.role == "master")
    if server.role == "slave":
        # How often this replica's CPU was contended enough to apply in slices.
        status = repl.link.status() if repl.link is not None else None
        fields.append(("repl_apply_sliced_batches", status.sliced_batches if status is not None else 0))
    return fields


def _replica_fields(repl: Replication) -> list[tuple[str, object]]:
    host, port = repl.master if repl.master is not None else ("", 0)
    status = repl.link.status() if repl.link is not None else None
    # The link's offset: the node's log end, or a Redis primary's offset (redis_link.py).
    offset = status.offset if status is not None else repl.end_offset()
    up = status is not None and status.link_up
    syncing = status is not None and status.sync_in_progress
    fields: list[tuple[str, object]] = [
        ("master_host", host),
        ("master_port", port),
        ("master_link_status", "up" if up else "down"),
        ("master_last_io_seconds_ago", status.last_io_seconds_ago if up and status is not None else -1),
        ("master_sync_in_progress", int(syncing)),
        ("slave_read_repl_offset", offset),
        ("slave_repl_offset", offset),
    ]
    if syncing and status is not None:
        total, read = status.sync_total_bytes, status.sync_read_bytes
        fields += [
            ("master_sync_total_bytes", total),
            ("master_sync_read_bytes", read),
            ("master_sync_left_bytes", total - read),
            ("master_sync_perc", f"{100.0 * read / total if total > 0 else 0.0:.2f}"),
            ("master_sync_last_io_seconds_ago", status.last_io_seconds_ago),
        ]
    if not up:
        down = status.link_down_since_seconds if status is not None else -1
        fields.append(("master_link_down_since_seconds", down))
    fields += [
        ("slave_priority", repl.config.get_int("replica-priority")),
        ("slave_read_only", 1 if repl.config.get("replica-read-only") == "yes" else 0),
        ("replica_announced", 1 if repl.config.get("replica-announced") == "yes" else 0),
    ]
    return fields


def sync_stats(repl: Replication) -> list[tuple[str, object]]:
    """INFO stats' sync_full, sync_partial_ok, sync_partial_err (this node as a primary)."""
    primary = repl.primary
    if primary is None:
        return [("sync_full", 0), ("sync_partial_ok", 0), ("sync_partial_err", 0)]
    return [
        ("sync_full", primary.full_syncs),
        ("sync_partial_ok", primary.partial_syncs),
        ("sync_partial_err", primary.partial_sync_errors),
    ]


def backlog_memory(repl: Replication) -> int:
    """INFO memory's mem_replication_backlog."""
    return repl.backlog.memory_bytes() if repl.backlog is not None else 0
