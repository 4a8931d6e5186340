"""A node's Prometheus metrics (`--metrics-port`): on top of the server core's
(node/metrics/core.py) and the process's, its role and role changes, replication (its log
offset; on a primary each replica's offset and lag, on a replica its link to the primary),
memory, persistence (AOF state, sizes and rewrites, saves) and keys per database with the
stream entries they hold.

Everything is read at scrape time, on the event loop, from INFO's memory, persistence and
replication sections and from the replica registry and keyspace they summarize. Counting the
stream entries walks the keys (O(keys), the same walk as a DBSIZE per database plus one
attribute read per key).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Final, Protocol

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from node.engine.stream_value import StreamValue
from node.metrics.core import CoreCollector, server_registry
from node.metrics.exporter import MetricsExporter, serve
from node.metrics.figures import PREFIX, Figure, families, number, section
from node.replication.planned_failover import IN_PROGRESS, NO_FAILOVER, WAITING

if TYPE_CHECKING:
    from node.config import Config
    from node.replication.role import ReplicationNode
    from node.server.server import Server


class MeteredNode(Protocol):
    """What a node's metrics read (node/app/rill_node.py's RillNode, which serves them)."""

    @property
    def config(self) -> Config: ...
    @property
    def server(self) -> Server: ...
    @property
    def replication(self) -> ReplicationNode: ...
    @property
    def role(self) -> str: ...

_ROLES: Final = ("master", "slave")

_MEMORY: Final = (
    Figure("used_memory", "memory_used_bytes", "Memory the data, client buffers, backlog and AOF buffer take (an estimate)"),
    Figure("used_memory_peak", "memory_peak_bytes", "Peak memory in use"),
    Figure("used_memory_dataset", "memory_dataset_bytes", "Memory the data takes (an estimate)"),
    Figure("mem_replication_backlog", "memory_replication_backlog_bytes", "The replication backlog's memory"),
    Figure("mem_clients_normal", "memory_clients_output_bytes", "Replies waiting in client output buffers"),
    Figure("maxmemory", "maxmemory_bytes", "The maxmemory setting (0: no limit)"),
)

_PERSISTENCE: Final = (
    Figure("aof_enabled", "aof_enabled", "1 when appendonly is on"),
    Figure("aof_rewrite_in_progress", "aof_rewrite_in_progress", "1 while an AOF rewrite runs"),
    Figure("aof_rewrite_scheduled", "aof_rewrite_scheduled", "1 while an AOF rewrite waits to start"),
    Figure("aof_rewrites", "aof_rewrites", "AOF rewrites done", counter=True),
    Figure("aof_rewrites_consecutive_failures", "aof_rewrites_consecutive_failures", "AOF rewrites failed in a row"),
    Figure("aof_last_bgrewrite_status", "aof_last_rewrite_ok", "1 when the last AOF rewrite succeeded"),
    Figure("aof_last_write_status", "aof_last_write_ok", "1 when the last AOF write and fsync succeeded"),
    Figure("aof_current_size", "aof_size_bytes", "The AOF's size (base and incr files); only while the AOF is on"),
    Figure("aof_base_size", "aof_base_size_bytes", "The AOF base's size at the last rewrite; only while the AOF is on"),
    Figure("aof_buffer_length", "aof_buffer_bytes", "Bytes waiting to be written to the AOF; only while the AOF is on"),
    Figure("rdb_changes_since_last_save", "changes_since_last_save", "Writes since the last snapshot"),
    Figure("rdb_bgsave_in_progress", "snapshot_in_progress", "1 while a background snapshot (BGSAVE) runs"),
    Figure("rdb_last_bgsave_status", "last_snapshot_ok", "1 when the last background snapshot succeeded"),
    Figure("rdb_last_save_time", "last_save_timestamp_seconds", "When the data was last saved (Unix time)"),
    Figure("rdb_saves", "snapshots", "Snapshots saved", counter=True),
)

_REPLICATION: Final = (
    Figure("master_repl_offset", "repl_offset_bytes", "End of this node's replication log (INFO's master_repl_offset)"),
    Figure("repl_backlog_histlen", "repl_backlog_history_bytes", "Log bytes the backlog holds for partial resyncs"),
    Figure("connected_slaves", "connected_replicas", "Replicas connected to this node"),
    Figure("master_link_status", "master_link_up", "On a replica: 1 while the link to its primary is up"),
    Figure("master_last_io_seconds_ago", "master_last_io_seconds", "On a replica: seconds since the primary last sent anything (-1 while down)"),
    Figure("master_sync_in_progress", "master_sync_in_progress", "On a replica: 1 during a full sync"),
    Figure("master_link_down_since_seconds", "master_link_down_seconds", "On a replica: seconds the link has been down"),
    # Fenced mode only (docs/failover.md).
    Figure("fence_epoch", "fence_epoch", "Fenced mode: the epoch this node promised not to follow anything older than"),
    Figure("log_epoch", "log_epoch", "Fenced mode: the epoch of the primary that wrote the end of the log"),
    Figure("epoch", "epoch", "Fenced mode: this node's epoch"),
    Figure("leads_epoch", "leads_epoch", "Fenced mode, on a primary: 1 while it leads its epoch"),
    Figure("lease_remaining_ms", "lease_remaining_seconds", "Fenced mode, on a primary: what remains of its lease",
           scale=0.001),
)

# INFO's master_failover_state: the FAILOVER command's progress on a primary.
_FAILOVER_STATES: Final = (NO_FAILOVER, WAITING, IN_PROGRESS)


class NodeCollector(Collector):
    """A prometheus_client collector for one node (`RillNode`)."""

    def __init__(self, node: MeteredNode) -> None:
        self.node = node

    def collect(self) -> Iterator[Metric]:
        node = self.node
        info = node.server.info_sections
        role = GaugeMetricFamily(PREFIX + "role", "1 for the node's replication role (master or slave)", labels=["role"])
        for name in _ROLES:
            role.add_metric([name], 1.0 if node.role == name else 0.0)
        yield role
        repl = node.replication
        changes = CounterMetricFamily(
            PREFIX + "role_changes", "Role changes since start: promotions (to master) and demotions (to slave)",
            labels=["to"],
        )
        changes.add_metric(["master"], repl.promotions)
        changes.add_metric(["slave"], repl.demotions)
        yield changes
        replication = section(info, "replication")  # flushes the log into the backlog first
        yield from families(replication, _REPLICATION)
        failover = GaugeMetricFamily(PREFIX + "failover_state", "1 for the FAILOVER command's state (INFO's "
                                     "master_failover_state)", labels=["state"])
        for state in _FAILOVER_STATES:
            failover.add_metric([state], 1.0 if replication.get("master_failover_state") == state else 0.0)
        yield failover
        yield from self._replicas(int(number(replication["master_repl_offset"])))
        yield from families(section(info, "memory"), _MEMORY)
        yield from families(section(info, "persistence"), _PERSISTENCE)
        yield from self._keys()

    def _replicas(self, offset: int) -> Iterator[Metric]:
        """Each replica of this node, labelled host:port as it announced itself."""
        primary = self.node.replication.primary
        replicas = primary.registry.replicas() if primary is not None else []
        labels = ["replica"]
        acked = GaugeMetricFamily(PREFIX + "replica_offset_bytes", "Log offset the replica acknowledged", labels=labels)
        lag = GaugeMetricFamily(PREFIX + "replica_lag_bytes", "Log bytes the replica has not acknowledged yet", labels=labels)
        age = GaugeMetricFamily(
            PREFIX + "replica_lag_seconds", "Seconds since the replica's last acknowledgement (INFO's lag)", labels=labels
        )
        online = GaugeMetricFamily(PREFIX + "replica_online", "1 once the replica streams (state online)", labels=labels)
        for r in replicas:
            name = [f"{r.host}:{r.port}"]
            acked.add_metric(name, r.offset)
            lag.add_metric(name, max(0, offset - r.offset))
            age.add_metric(name, r.lag)
            online.add_metric(name, 1.0 if r.state == "online" else 0.0)
        yield from (acked, lag, age, online)

    def _keys(self) -> Iterator[Metric]:
        keyspace = self.node.server.keyspace
        labels = ["db"]
        keys = GaugeMetricFamily(PREFIX + "keys", "Keys per database", labels=labels)
        expiring = GaugeMetricFamily(PREFIX + "keys_expiring", "Keys with a TTL per database", labels=labels)
        streams = GaugeMetricFamily(PREFIX + "streams", "Stream keys per database", labels=labels)
        entries = GaugeMetricFamily(PREFIX + "stream_entries", "Entries in the streams of each database", labels=labels)
        for i, (db, expires) in enumerate(zip(keyspace.dbs, keyspace.expires)):
            if db:  # as INFO keyspace lists them
                stream_lengths = [v.length for v in db.values() if isinstance(v, StreamValue)]
                index = [str(i)]
                keys.add_metric(index, len(db))
                expiring.add_metric(index, len(expires))
                streams.add_metric(index, len(stream_lengths))
                entries.add_metric(index, sum(stream_lengths))
        yield from (keys, expiring, streams, entries)


async def start_metrics(node: MeteredNode) -> MetricsExporter | None:
    """Serves the node's metrics on `metrics-port` (on the bind addresses); None when 0 (off)."""
    port = node.config.get_int("metrics-port")
    if not port:
        return None
    hosts = node.config.get("bind").split() or ["127.0.0.1"]
    registry = server_registry(CoreCollector(node.server), NodeCollector(node))
    return await serve(registry, hosts, port)
