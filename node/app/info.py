"""INFO's node sections, added to the server core's (node/server/info.py: server, clients,
stats, cpu, commandstats, errorstats): memory, persistence, replication, modules,
latencystats, cluster and keyspace; plus the figures behind MEMORY STATS.

Field names are Redis 7.2's (server.c genRedisInfoString). Figures Rill does not have (forks,
allocator internals, evictions, scripting) keep Redis's field with the value an idle Redis
shows, so tools that read INFO find every field they expect. `used_memory` and its parts are
the node's estimate of what its data and buffers take (node.app.memory); `used_memory_rss`
is the process's RSS (/proc/self/statm).
"""

from __future__ import annotations

import os
import resource
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from node.persistence.service import AOF_OFF
from node.replication import info as replication_info
from node.server.info import Fields, InfoSections

if TYPE_CHECKING:
    from node.app.memory import MemoryAccounting
    from node.persistence.service import Persistence
    from node.replication.role import ReplicationNode
    from node.server.server import Server


class NodeFigures(Protocol):
    """What the node's INFO sections and MEMORY STATS read (node/app/rill_node.py's RillNode,
    which adds them when it is built)."""

    @property
    def clock(self) -> Callable[[], int]: ...
    @property
    def server(self) -> Server: ...
    @property
    def persistence(self) -> Persistence: ...
    @property
    def replication(self) -> ReplicationNode: ...
    @property
    def memory(self) -> MemoryAccounting: ...
    @property
    def keys_expired_at_load(self) -> int: ...  # INFO rdb_last_load_keys_expired

# -- process figures ------------------------------------------------------------------------


def current_rss() -> int:
    """Resident set size in bytes (Linux /proc; peak RSS elsewhere)."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return peak_rss()


def peak_rss() -> int:
    usage = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # Linux reports kilobytes, macOS bytes.
    return usage if sys.platform == "darwin" else usage * 1024


def _total_system_memory() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return 0


def bytes_to_human(n: int) -> str:
    """Redis's bytesToHuman: B below 1K, else two decimals with K/M/G/T/P."""
    if n < 1024:
        return f"{n}B"
    for exponent, unit in ((1, "K"), (2, "M"), (3, "G"), (4, "T"), (5, "P")):
        if n < 1024 ** (exponent + 1) or unit == "P":
            return f"{n / 1024**exponent:.2f}{unit}"
    return f"{n}B"


# -- sections -------------------------------------------------------------------------------


def _memory(node: NodeFigures) -> Fields:
    parts = node.memory.parts()
    dataset, clients, backlog, aof, overhead, used = (
        parts.dataset, parts.clients, parts.backlog, parts.aof_buffer, parts.overhead, parts.used
    )
    peak = node.memory.peak
    rss = current_rss()
    system = _total_system_memory()
    maxmemory = node.server.config.get_int("maxmemory")
    ratio = rss / used if used else 1.0
    return [
        ("used_memory", used),
        ("used_memory_human", bytes_to_human(used)),
        ("used_memory_rss", rss),
        ("used_memory_rss_human", bytes_to_human(rss)),
        ("used_memory_peak", peak),
        ("used_memory_peak_human", bytes_to_human(peak)),
        ("used_memory_peak_perc", f"{100 * used / peak if peak else 100:.2f}%"),
        ("used_memory_overhead", overhead),
        ("used_memory_startup", 0),
        ("used_memory_dataset", dataset),
        ("used_memory_dataset_perc", f"{100 * dataset / used if used else 0:.2f}%"),
        ("allocator_allocated", used),
        ("allocator_active", used),
        ("allocator_resident", rss),
        ("total_system_memory", system),
        ("total_system_memory_human", bytes_to_human(system)),
        ("used_memory_lua", 0),
        ("used_memory_vm_eval", 0),
        ("used_memory_lua_human", "0B"),
        ("used_memory_scripts_eval", 0),
        ("number_of_cached_scripts", 0),
        ("number_of_functions", 0),
        ("number_of_libraries", 0),
        ("used_memory_vm_functions", 0),
        ("used_memory_vm_total", 0),
        ("used_memory_vm_total_human", "0B"),
        ("used_memory_functions", 0),
        ("used_memory_scripts", 0),
        ("used_memory_scripts_human", "0B"),
        ("maxmemory", maxmemory),
        ("maxmemory_human", bytes_to_human(maxmemory)),
        ("maxmemory_policy", node.server.config.get("maxmemory-policy")),
        ("allocator_frag_ratio", "1.00"),
        ("allocator_frag_bytes", 0),
        ("allocator_rss_ratio", f"{ratio:.2f}"),
        ("allocator_rss_bytes", rss - used),
        ("rss_overhead_ratio", "1.00"),
        ("rss_overhead_bytes", 0),
        # The interpreter is in the RSS and not in used_memory: the ratio says how much.
        ("mem_fragmentation_ratio", f"{ratio:.2f}"),
        ("mem_fragmentation_bytes", rss - used),
        ("mem_not_counted_for_evict", aof),
        ("mem_replication_backlog", backlog),
        ("mem_total_replication_buffers", backlog),
        ("mem_clients_slaves", 0),
        ("mem_clients_normal", clients),
        ("mem_cluster_links", 0),
        ("mem_aof_buffer", aof),
        ("mem_allocator", "pymalloc"),
        ("active_defrag_running", 0),
        ("lazyfree_pending_objects", 0),
        ("lazyfreed_objects", 0),
    ]


def _persistence(node: NodeFigures) -> Fields:
    p = node.persistence
    rdb = p.snapshots
    child = p.child.job
    rdb_child = child is not None and child.kind == "rdb"
    aof_child = child is not None and child.kind == "aof"
    running = int(time.monotonic() - child.started) if child is not None else -1
    return [
        # Data is loaded before the node listens, so no client sees loading:1.
        ("loading", 0),
        ("async_loading", 0),
        ("current_cow_peak", 0),
        ("current_cow_size", 0),
        ("current_cow_size_age", 0),
        ("current_fork_perc", "0.00"),
        ("current_save_keys_processed", 0),
        ("current_save_keys_total", 0),
        ("rdb_changes_since_last_save", p.snapshots.changes_since_save()),
        ("rdb_bgsave_in_progress", int(rdb_child)),
        ("rdb_last_save_time", node.persistence.lastsave),
        ("rdb_last_bgsave_status", "ok" if rdb.bgsave_ok else "err"),
        ("rdb_last_bgsave_time_sec", rdb.last_bgsave_seconds),
        ("rdb_current_bgsave_time_sec", running if rdb_child else -1),
        ("rdb_saves", rdb.rdb_saves),
        ("rdb_last_cow_size", 0),
        ("rdb_last_load_keys_expired", node.keys_expired_at_load),
        ("rdb_last_load_keys_loaded", p.keys_loaded),
        ("aof_enabled", int(p.aof_state != AOF_OFF)),
        ("aof_rewrite_in_progress", int(aof_child)),
        ("aof_rewrite_scheduled", int(p.rewrite_scheduled)),
        ("aof_last_rewrite_time_sec", p.last_rewrite_seconds),
        ("aof_current_rewrite_time_sec", running if aof_child else -1),
        ("aof_last_bgrewrite_status", "ok" if p.rewrite_ok else "err"),
        ("aof_rewrites", p.rewrites),
        ("aof_rewrites_consecutive_failures", p.rewrite_failures),
        ("aof_last_write_status", "ok" if p.aof.write_failure is None and p.aof.fsync_failure is None else "err"),
        ("aof_last_cow_size", 0),
        ("module_fork_in_progress", 0),
        ("module_fork_last_cow_size", 0),
        *p.aof_size_fields(),  # only while the AOF is on, as in Redis
    ]


def _keyspace(node: NodeFigures) -> Fields:
    keyspace = node.server.keyspace
    now = node.clock()
    return [
        (f"db{i}", f"keys={len(db)},expires={len(expires)},avg_ttl={expires.average_ttl(now)}")
        for i, (db, expires) in enumerate(zip(keyspace.dbs, keyspace.expires)) if db
    ]


def add_node_sections(info: InfoSections, node: NodeFigures) -> None:
    info.add("memory", "Memory", lambda: _memory(node))
    info.add("persistence", "Persistence", lambda: _persistence(node))
    info.add("replication", "Replication", lambda: replication_info.info_fields(node.replication))
    info.add("modules", "Modules", list)
    info.add("latencystats", "Latencystats", list, default=False)  # no per-command latency histograms
    info.add("cluster", "Cluster", lambda: [("cluster_enabled", 0)])
    info.add("keyspace", "Keyspace", lambda: _keyspace(node))


# -- MEMORY STATS ---------------------------------------------------------------------------


def memory_stats(node: NodeFigures) -> dict[bytes, Any]:
    """MEMORY STATS in Redis's field names, from the same figures as INFO memory."""
    parts = node.memory.parts()
    dataset, clients, backlog, aof, overhead, used = (
        parts.dataset, parts.clients, parts.backlog, parts.aof_buffer, parts.overhead, parts.used
    )
    peak = node.memory.peak
    rss = current_rss()
    keys = node.server.keyspace.key_count()
    out: dict[bytes, Any] = {
        b"peak.allocated": peak,
        b"total.allocated": used,
        b"startup.allocated": 0,
        b"replication.backlog": backlog,
        b"clients.slaves": 0,
        b"clients.normal": clients,
        b"cluster.links": 0,
        b"aof.buffer": aof,
        b"lua.caches": 0,
        b"functions.caches": 0,
    }
    for i, db in enumerate(node.server.keyspace.dbs):
        if db:
            out[b"db.%d" % i] = {
                b"overhead.hashtable.main": sys.getsizeof(db),
                b"overhead.hashtable.expires": sys.getsizeof(node.server.keyspace.expires[i].deadlines),
                b"overhead.hashtable.slot-to-keys": 0,
            }
    out.update({
        b"overhead.total": overhead,
        b"keys.count": keys,
        b"keys.bytes-per-key": dataset // keys if keys else 0,
        b"dataset.bytes": dataset,
        b"dataset.percentage": 100.0 * dataset / used if used else 0.0,
        b"peak.percentage": 100.0 * used / peak if peak else 100.0,
        b"allocator.allocated": used,
        b"allocator.active": used,
        b"allocator.resident": rss,
        b"allocator-fragmentation.ratio": 1.0,
        b"allocator-fragmentation.bytes": 0,
        b"allocator-rss.ratio": rss / used if used else 1.0,
        b"allocator-rss.bytes": rss - used,
        b"rss-overhead.ratio": 1.0,
        b"rss-overhead.bytes": 0,
        b"fragmentation": rss / used if used else 1.0,
        b"fragmentation.bytes": rss - used,
    })
    return out
