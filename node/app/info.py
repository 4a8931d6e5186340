"""INFO: the server's state as Redis 7.2 reports it, plus the figures behind MEMORY STATS.

Sections, their order, titles and field names are Redis's (server.c genRedisInfoString):
sections are separated by a blank line, every line ends with CRLF. Figures Rill does not
have (forks, allocator internals, evictions, scripting) keep Redis's field with the value
an idle Redis shows, so tools that read INFO find every field they expect. Memory figures
come from the process itself (RSS from /proc/self/statm, peak RSS from getrusage): Rill
runs on Python's allocator and cannot count its allocations as zmalloc does.
"""

from __future__ import annotations

import os
import platform
import resource
import struct
import sys
import time
from collections import deque
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Final

from node import REDIS_VERSION, __version__
from node.persistence.service import AOF_OFF
from node.replication import info as replication_info

if TYPE_CHECKING:
    import asyncio

    from node.app.rill_node import RillNode

_SECTION_ORDER: Final = (
    "server", "clients", "memory", "persistence", "stats", "replication", "cpu", "modules",
    "commandstats", "errorstats", "latencystats", "cluster", "keyspace",
)
# `INFO` and `INFO default`; "module_list" is Redis's internal name for "# Modules".
_DEFAULT_SECTIONS: Final = frozenset(
    {"server", "clients", "memory", "persistence", "stats", "replication", "cpu", "modules", "errorstats", "cluster", "keyspace"}
)
_SECTION_ALIASES: Final = {"module_list": "modules"}


def wanted_sections(args: list[str]) -> set[str]:
    """genInfoSectionDict: no argument = the default sections; `all` and `everything` = every
    section (Rill has no modules, so they are the same); unknown names select nothing."""
    if not args:
        return set(_DEFAULT_SECTIONS)
    wanted: set[str] = set()
    for name in args:
        name = name.lower()
        if name == "default":
            wanted |= _DEFAULT_SECTIONS
        elif name in ("all", "everything"):
            wanted |= set(_SECTION_ORDER)
        else:
            wanted.add(_SECTION_ALIASES.get(name, name))
    return wanted


def render_info(node: RillNode, sections: list[str]) -> str:
    wanted = wanted_sections(sections)
    return "\r\n".join(_RENDERERS[name](node) for name in _SECTION_ORDER if name in wanted)


def _section(title: str, fields: Iterable[tuple[str, object]]) -> str:
    return f"# {title}\r\n" + "".join(f"{name}:{value}\r\n" for name, value in fields)


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


class InstantaneousMetrics:
    """Redis's trackInstantaneousMetric: every 100 ms the rate of a few counters is sampled,
    and INFO reports the mean of the last 16 samples (ops/sec, network kbps)."""

    SAMPLES: Final = 16
    PERIOD: Final = 0.1

    def __init__(self) -> None:
        self._read: Callable[[], dict[str, int]] | None = None
        self._last: tuple[float, dict[str, int]] | None = None
        self._samples: dict[str, deque[float]] = {}
        self._timer: asyncio.TimerHandle | None = None

    def start(self, loop: asyncio.AbstractEventLoop, read: Callable[[], dict[str, int]]) -> None:
        self._read = read
        self._last = (time.monotonic(), read())
        self._timer = loop.call_later(self.PERIOD, self._tick, loop)

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _tick(self, loop: asyncio.AbstractEventLoop) -> None:
        assert self._read is not None and self._last is not None
        now, values = time.monotonic(), self._read()
        then, previous = self._last
        elapsed = now - then
        if elapsed > 0:
            for name, value in values.items():
                rate = (value - previous.get(name, value)) / elapsed
                self._samples.setdefault(name, deque(maxlen=self.SAMPLES)).append(rate)
        self._last = (now, values)
        self._timer = loop.call_later(self.PERIOD, self._tick, loop)

    def rate(self, name: str) -> float:
        samples = self._samples.get(name)
        return sum(samples) / len(samples) if samples else 0.0


# -- sections -------------------------------------------------------------------------------


def _server(node: RillNode) -> str:
    uname = os.uname()
    uptime = int(time.time() - node.server.start_time)
    compiler = platform.python_compiler().split()
    cc_version = compiler[1] if len(compiler) > 1 and compiler[1][:1].isdigit() else "0.0.0"
    config_file = node.server.config.config_file
    binds = node.server.config.get("bind").split() or ["127.0.0.1"]
    now_us = time.time_ns() // 1000
    return _section("Server", [
        ("redis_version", REDIS_VERSION),
        ("redis_git_sha1", "00000000"),
        ("redis_git_dirty", 0),
        ("redis_build_id", "rill-" + __version__),
        ("redis_mode", "standalone"),
        ("os", f"{uname.sysname} {uname.release} {uname.machine}"),
        ("arch_bits", struct.calcsize("P") * 8),
        ("monotonic_clock", "POSIX clock_gettime"),
        ("multiplexing_api", "epoll" if sys.platform.startswith("linux") else "kqueue"),
        ("atomicvar_api", "python-gil"),
        ("gcc_version", cc_version),
        ("process_id", os.getpid()),
        ("process_supervised", "no"),
        ("run_id", node.server.run_id),
        ("tcp_port", node.server.port),
        ("server_time_usec", now_us),
        ("uptime_in_seconds", uptime),
        ("uptime_in_days", uptime // 86400),
        ("hz", node.server.config.get_int("hz")),
        ("configured_hz", node.server.config.get_int("hz")),
        ("lru_clock", (now_us // 1_000_000) & ((1 << 24) - 1)),
        ("executable", os.path.abspath(sys.argv[0]) if sys.argv and sys.argv[0] else ""),
        ("config_file", os.path.abspath(config_file) if config_file else ""),
        ("io_threads_active", 0),
        ("listener0", "name=tcp," + ",".join(f"bind={b}" for b in binds) + f",port={node.server.port}"),
        ("rill_version", __version__),
    ])


def _clients(node: RillNode) -> str:
    sessions = list(node.server.sessions())
    waiters = node.server.blocking.waiters()
    blocked_keys = {ref for waiter in waiters for ref in waiter.keys}
    return _section("Clients", [
        # Replicas are not clients here (Redis counts server.clients minus server.slaves).
        ("connected_clients", sum(1 for s in sessions if "replica" not in s.flags or "monitor" in s.flags)),
        ("cluster_connections", 0),
        ("maxclients", node.server.config.get_int("maxclients")),
        ("client_recent_max_input_buffer", 0),
        ("client_recent_max_output_buffer", max((s.output_size for s in sessions), default=0)),
        ("blocked_clients", node.server.blocking.blocked_count),
        ("tracking_clients", 0),
        ("clients_in_timeout_table", sum(1 for w in waiters if w.timer is not None)),
        ("total_blocking_keys", len(blocked_keys)),
        ("total_blocking_keys_on_nokey", 0),
    ])


def _memory(node: RillNode) -> str:
    rss = current_rss()
    peak = max(peak_rss(), rss)
    startup = min(node.startup_rss or rss, rss)
    dataset = rss - startup
    system = _total_system_memory()
    maxmemory = node.server.config.get_int("maxmemory")
    return _section("Memory", [
        ("used_memory", rss),
        ("used_memory_human", bytes_to_human(rss)),
        ("used_memory_rss", rss),
        ("used_memory_rss_human", bytes_to_human(rss)),
        ("used_memory_peak", peak),
        ("used_memory_peak_human", bytes_to_human(peak)),
        ("used_memory_peak_perc", f"{100 * rss / peak:.2f}%"),
        ("used_memory_overhead", startup),
        ("used_memory_startup", startup),
        ("used_memory_dataset", dataset),
        ("used_memory_dataset_perc", f"{100 * dataset / rss if rss else 0:.2f}%"),
        ("allocator_allocated", rss),
        ("allocator_active", rss),
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
        ("allocator_rss_ratio", "1.00"),
        ("allocator_rss_bytes", 0),
        ("rss_overhead_ratio", "1.00"),
        ("rss_overhead_bytes", 0),
        ("mem_fragmentation_ratio", "1.00"),
        ("mem_fragmentation_bytes", 0),
        ("mem_not_counted_for_evict", 0),
        ("mem_replication_backlog", replication_info.backlog_memory(node.replication)),
        ("mem_total_replication_buffers", replication_info.backlog_memory(node.replication)),
        ("mem_clients_slaves", 0),
        ("mem_clients_normal", sum(s.output_size for s in node.server.sessions())),
        ("mem_cluster_links", 0),
        ("mem_aof_buffer", 0),
        ("mem_allocator", "pymalloc"),
        ("active_defrag_running", 0),
        ("lazyfree_pending_objects", 0),
        ("lazyfreed_objects", 0),
    ])


def _persistence(node: RillNode) -> str:
    p = node.persistence
    rdb = p.snapshots
    child = p.child.job
    rdb_child = child is not None and child.kind == "rdb"
    aof_child = child is not None and child.kind == "aof"
    running = int(time.monotonic() - child.started) if child is not None else -1
    return _section("Persistence", [
        # Data is loaded before the node listens, so no client sees loading:1.
        ("loading", 0),
        ("async_loading", 0),
        ("current_cow_peak", 0),
        ("current_cow_size", 0),
        ("current_cow_size_age", 0),
        ("current_fork_perc", "0.00"),
        ("current_save_keys_processed", 0),
        ("current_save_keys_total", 0),
        ("rdb_changes_since_last_save", node.server.dirty),
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
    ])


def _stats(node: RillNode) -> str:
    metrics = node.metrics
    dispatcher = node.server.dispatcher
    return _section("Stats", [
        ("total_connections_received", node.server.stats_connections),
        ("total_commands_processed", dispatcher.total_commands),
        ("instantaneous_ops_per_sec", round(metrics.rate("commands"))),
        ("total_net_input_bytes", node.server.stats_net_input),
        ("total_net_output_bytes", node.server.stats_net_output),
        ("total_net_repl_input_bytes", 0),
        ("total_net_repl_output_bytes", 0),
        ("instantaneous_input_kbps", f"{metrics.rate('net_input') / 1024:.2f}"),
        ("instantaneous_output_kbps", f"{metrics.rate('net_output') / 1024:.2f}"),
        ("instantaneous_input_repl_kbps", "0.00"),
        ("instantaneous_output_repl_kbps", "0.00"),
        ("rejected_connections", node.server.stats_rejected_connections),
        *replication_info.sync_stats(node.replication),
        ("expired_keys", node.server.expiry.expired_keys),
        ("expired_stale_perc", f"{node.server.expiry.stale_perc * 100:.2f}"),
        ("expired_time_cap_reached_count", node.server.expiry.time_cap_reached),
        ("expire_cycle_cpu_milliseconds", node.server.expiry.cycle_ns // 1_000_000),
        ("evicted_keys", 0),
        ("evicted_clients", 0),
        ("total_eviction_exceeded_time", 0),
        ("current_eviction_exceeded_time", 0),
        ("keyspace_hits", node.server.stats_keyspace_hits),
        ("keyspace_misses", node.server.stats_keyspace_misses),
        ("pubsub_channels", 0),
        ("pubsub_patterns", 0),
        ("pubsubshard_channels", 0),
        ("latest_fork_usec", 0),
        ("total_forks", 0),
        ("migrate_cached_sockets", 0),
        ("slave_expires_tracked_keys", 0),
        ("active_defrag_hits", 0),
        ("active_defrag_misses", 0),
        ("active_defrag_key_hits", 0),
        ("active_defrag_key_misses", 0),
        ("total_active_defrag_time", 0),
        ("current_active_defrag_time", 0),
        ("tracking_total_keys", 0),
        ("tracking_total_items", 0),
        ("tracking_total_prefixes", 0),
        ("unexpected_error_replies", 0),
        ("total_error_replies", dispatcher.total_errors),
        ("dump_payload_sanitizations", 0),
        ("total_reads_processed", 0),
        ("total_writes_processed", 0),
        ("io_threaded_reads_processed", 0),
        ("io_threaded_writes_processed", 0),
        ("client_query_buffer_limit_disconnections", node.server.stats_query_limit_disconnections),
        ("client_output_buffer_limit_disconnections", node.server.stats_output_limit_disconnections),
        ("reply_buffer_shrinks", 0),
        ("reply_buffer_expands", 0),
        ("eventloop_cycles", 0),
        ("eventloop_duration_sum", 0),
        ("eventloop_duration_cmd_sum", 0),
        ("instantaneous_eventloop_cycles_per_sec", 0),
        ("instantaneous_eventloop_duration_usec", 0),
        ("acl_access_denied_auth", 0),
        ("acl_access_denied_cmd", 0),
        ("acl_access_denied_key", 0),
        ("acl_access_denied_channel", 0),
    ])


def _replication(node: RillNode) -> str:
    return _section("Replication", replication_info.info_fields(node.replication))


def _cpu(node: RillNode) -> str:
    me = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    thread = resource.getrusage(getattr(resource, "RUSAGE_THREAD", resource.RUSAGE_SELF))
    return _section("CPU", [
        ("used_cpu_sys", f"{me.ru_stime:.6f}"),
        ("used_cpu_user", f"{me.ru_utime:.6f}"),
        ("used_cpu_sys_children", f"{children.ru_stime:.6f}"),
        ("used_cpu_user_children", f"{children.ru_utime:.6f}"),
        ("used_cpu_sys_main_thread", f"{thread.ru_stime:.6f}"),
        ("used_cpu_user_main_thread", f"{thread.ru_utime:.6f}"),
    ])


def _modules(node: RillNode) -> str:
    return _section("Modules", [])


def _float32(value: float) -> float:
    # Redis divides as C floats before printing usec_per_call.
    return float(struct.unpack("f", struct.pack("f", value))[0])


def _commandstats(node: RillNode) -> str:
    lines = []
    for name, st in node.server.dispatcher.stats.items():
        if st.calls or st.failed or st.rejected:
            per_call = _float32(st.nsec / 1000 / st.calls) if st.calls else 0.0
            lines.append((
                f"cmdstat_{name}",
                f"calls={st.calls},usec={st.usec},usec_per_call={per_call:.2f},"
                f"rejected_calls={st.rejected},failed_calls={st.failed}",
            ))
    return _section("Commandstats", lines)


def _errorstats(node: RillNode) -> str:
    return _section("Errorstats", [(f"errorstat_{code}", f"count={n}") for code, n in sorted(node.server.dispatcher.errors.items())])


def _latencystats(node: RillNode) -> str:
    return _section("Latencystats", [])  # Rill keeps no per-command latency histograms


def _cluster(node: RillNode) -> str:
    return _section("Cluster", [("cluster_enabled", 0)])


def _keyspace(node: RillNode) -> str:
    keyspace = node.server.keyspace
    now = node.clock()
    return _section("Keyspace", [
        (f"db{i}", f"keys={len(db)},expires={len(expires)},avg_ttl={expires.average_ttl(now)}")
        for i, (db, expires) in enumerate(zip(keyspace.dbs, keyspace.expires)) if db
    ])


_RENDERERS: Final[dict[str, Callable[[RillNode], str]]] = {
    "server": _server,
    "clients": _clients,
    "memory": _memory,
    "persistence": _persistence,
    "stats": _stats,
    "replication": _replication,
    "cpu": _cpu,
    "modules": _modules,
    "commandstats": _commandstats,
    "errorstats": _errorstats,
    "latencystats": _latencystats,
    "cluster": _cluster,
    "keyspace": _keyspace,
}


# -- MEMORY STATS ---------------------------------------------------------------------------


def memory_stats(node: RillNode) -> dict[bytes, Any]:
    """MEMORY STATS in Redis's field names, from the same process figures as INFO memory."""
    rss = current_rss()
    peak = max(peak_rss(), rss)
    startup = min(node.startup_rss or rss, rss)
    dataset = rss - startup
    keys = node.server.keyspace.key_count()
    out: dict[bytes, Any] = {
        b"peak.allocated": peak,
        b"total.allocated": rss,
        b"startup.allocated": startup,
        b"replication.backlog": replication_info.backlog_memory(node.replication),
        b"clients.slaves": 0,
        b"clients.normal": sum(s.output_size for s in node.server.sessions()),
        b"cluster.links": 0,
        b"aof.buffer": 0,
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
        b"overhead.total": startup,
        b"keys.count": keys,
        b"keys.bytes-per-key": dataset // keys if keys else 0,
        b"dataset.bytes": dataset,
        b"dataset.percentage": 100.0 * dataset / rss if rss else 0.0,
        b"peak.percentage": 100.0 * rss / peak if peak else 0.0,
        b"allocator.allocated": rss,
        b"allocator.active": rss,
        b"allocator.resident": rss,
        b"allocator-fragmentation.ratio": 1.0,
        b"allocator-fragmentation.bytes": 0,
        b"allocator-rss.ratio": 1.0,
        b"allocator-rss.bytes": 0,
        b"rss-overhead.ratio": 1.0,
        b"rss-overhead.bytes": 0,
        b"fragmentation": 1.0,
        b"fragmentation.bytes": 0,
    })
    return out
