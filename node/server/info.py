"""INFO for any server built on the core: the sections it renders and the ones every server
has (server, clients, stats, cpu, commandstats, errorstats).

Sections, their order, titles and field names are Redis 7.2's (server.c genRedisInfoString):
sections are separated by a blank line, every line ends with CRLF, and the known sections
come in Redis's order whatever order they were added in; others (a sentinel's "sentinel")
follow in the order they were added. Which sections a request selects follows
genInfoSectionDict: none or `default` = the default ones, `all`/`everything` = every one,
unknown names select nothing. A server adds its own sections with `InfoSections.add` (a
node: memory, persistence, replication, keyspace, ...; a sentinel: sentinel).
Figures a server does not have keep Redis's field with the value an idle Redis shows, so
tools that read INFO find every field they expect.
"""

from __future__ import annotations

import asyncio
import os
import platform
import resource
import struct
import sys
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Protocol

from node import __version__, reported_version
from node.commands.acl_rules import DENIED_AUTH, DENIED_CHANNEL, DENIED_CMD, DENIED_KEY

if TYPE_CHECKING:
    from node.commands.acl_users import AclUsers
    from node.commands.context import ClientSession
    from node.config import Config
    from node.server.blocking import BlockingManager
    from node.server.dispatch import Dispatcher
    from node.server.pubsub import PubSubRegistry

Fields = list[tuple[str, object]]


class CoreFigures(Protocol):
    """What the core's INFO sections read of the server core (node/server/core.py, which
    adds them when it is built): its identity, clients, counters and registries."""

    @property
    def config(self) -> Config: ...
    @property
    def mode(self) -> str: ...
    @property
    def run_id(self) -> str: ...
    @property
    def start_time(self) -> float: ...
    @property
    def port(self) -> int: ...
    @property
    def tls_port(self) -> int: ...
    @property
    def acl(self) -> AclUsers: ...
    @property
    def dispatcher(self) -> Dispatcher: ...
    @property
    def blocking(self) -> BlockingManager: ...
    @property
    def pubsub(self) -> PubSubRegistry: ...
    @property
    def metrics(self) -> InstantaneousMetrics: ...
    @property
    def stats_connections(self) -> int: ...
    @property
    def stats_rejected_connections(self) -> int: ...
    @property
    def stats_net_input(self) -> int: ...
    @property
    def stats_net_output(self) -> int: ...
    @property
    def stats_output_limit_disconnections(self) -> int: ...
    @property
    def stats_query_limit_disconnections(self) -> int: ...
    @property
    def stats_keyspace_hits(self) -> int: ...
    @property
    def stats_keyspace_misses(self) -> int: ...

    def sessions(self) -> Iterable[ClientSession]: ...
    def expiry_stats(self) -> Fields: ...
    def sync_stats(self) -> Fields: ...

# Redis's section order (genRedisInfoString).
_REDIS_ORDER: Final = (
    "server", "clients", "memory", "persistence", "stats", "replication", "cpu", "modules",
    "commandstats", "errorstats", "latencystats", "cluster", "keyspace",
)
# "module_list" is Redis's internal name for "# Modules".
_SECTION_ALIASES: Final = {"module_list": "modules"}


@dataclass(frozen=True, slots=True)
class InfoSection:
    name: str  # as INFO selects it (lower case)
    title: str  # the "# Title" line
    fields: Callable[[], Fields]
    default: bool  # part of INFO / INFO default


class InfoSections:
    """The sections one server renders."""

    def __init__(self) -> None:
        self._sections: dict[str, InfoSection] = {}

    def add(self, name: str, title: str, fields: Callable[[], Fields], default: bool = True) -> None:
        self._sections[name] = InfoSection(name, title, fields, default)

    def selected(self, args: list[str]) -> list[InfoSection]:
        """The sections `INFO args...` shows, in the order they are shown."""
        ordered = [self._sections[n] for n in _REDIS_ORDER if n in self._sections]
        ordered += [s for n, s in self._sections.items() if n not in _REDIS_ORDER]
        if not args:
            return [s for s in ordered if s.default]
        wanted: set[str] = set()
        for name in args:
            name = name.lower()
            if name == "default":
                wanted |= {s.name for s in ordered if s.default}
            elif name in ("all", "everything"):
                wanted |= {s.name for s in ordered}
            else:
                wanted.add(_SECTION_ALIASES.get(name, name))
        return [s for s in ordered if s.name in wanted]

    def render(self, args: list[str]) -> str:
        return "\r\n".join(render_section(s.title, s.fields()) for s in self.selected(args))


def render_section(title: str, fields: Iterable[tuple[str, object]]) -> str:
    return f"# {title}\r\n" + "".join(f"{name}:{value}\r\n" for name, value in fields)


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


# -- the sections every server has -----------------------------------------------------------


def add_core_sections(info: InfoSections, core: CoreFigures) -> None:
    """Server, clients, stats, cpu; and commandstats and errorstats except in sentinel mode
    (sentinelInfoCommand keeps only server, clients, cpu, stats and its own section)."""
    info.add("server", "Server", lambda: server_fields(core))
    info.add("clients", "Clients", lambda: clients_fields(core))
    info.add("stats", "Stats", lambda: stats_fields(core))
    info.add("cpu", "CPU", cpu_fields)
    if core.mode != "sentinel":
        info.add("commandstats", "Commandstats", lambda: commandstats_fields(core), default=False)
        info.add("errorstats", "Errorstats", lambda: errorstats_fields(core))


def server_fields(core: CoreFigures) -> Fields:
    uname = os.uname()
    uptime = int(time.time() - core.start_time)
    compiler = platform.python_compiler().split()
    cc_version = compiler[1] if len(compiler) > 1 and compiler[1][:1].isdigit() else "0.0.0"
    config = core.config
    config_file = config.config_file
    binds = config.get("bind").split() or ["127.0.0.1"]
    now_us = time.time_ns() // 1000
    return [
        ("redis_version", reported_version(core.mode)),
        ("redis_git_sha1", "00000000"),
        ("redis_git_dirty", 0),
        ("redis_build_id", "rill-" + __version__),
        ("redis_mode", core.mode),
        ("os", f"{uname.sysname} {uname.release} {uname.machine}"),
        ("arch_bits", struct.calcsize("P") * 8),
        ("monotonic_clock", "POSIX clock_gettime"),
        ("multiplexing_api", "epoll" if sys.platform.startswith("linux") else "kqueue"),
        ("atomicvar_api", "python-gil"),
        ("gcc_version", cc_version),
        ("process_id", os.getpid()),
        ("process_supervised", "no"),
        ("run_id", core.run_id),
        ("tcp_port", core.port),
        ("server_time_usec", now_us),
        ("uptime_in_seconds", uptime),
        ("uptime_in_days", uptime // 86400),
        ("hz", config.get_int("hz")),
        ("configured_hz", config.get_int("hz")),
        ("lru_clock", (now_us // 1_000_000) & ((1 << 24) - 1)),
        ("executable", os.path.abspath(sys.argv[0]) if sys.argv and sys.argv[0] else ""),
        ("config_file", os.path.abspath(config_file) if config_file else ""),
        ("io_threads_active", 0),
        *_listeners(binds, core.port, core.tls_port),
        ("rill_version", __version__),
    ]


def _listeners(binds: list[str], port: int, tls_port: int) -> Fields:
    """Redis 7.2's listener lines: indexed by connection type (0 tcp, 2 tls), each shown when
    it listens."""
    bound = ",".join(f"bind={b}" for b in binds)
    out: Fields = []
    if port:
        out.append(("listener0", f"name=tcp,{bound},port={port}"))
    if tls_port:
        out.append(("listener2", f"name=tls,{bound},port={tls_port}"))
    return out


def clients_fields(core: CoreFigures) -> Fields:
    sessions = list(core.sessions())
    waiters = core.blocking.waiters()
    blocked_keys = {ref for waiter in waiters for ref in waiter.keys}
    return [
        # Replicas are not clients here (Redis counts server.clients minus server.slaves).
        ("connected_clients", sum(1 for s in sessions if "replica" not in s.flags or "monitor" in s.flags)),
        ("cluster_connections", 0),
        ("maxclients", core.config.get_int("maxclients")),
        ("client_recent_max_input_buffer", 0),
        ("client_recent_max_output_buffer", max((s.output_size for s in sessions), default=0)),
        ("blocked_clients", core.blocking.blocked_count),
        ("tracking_clients", 0),
        ("clients_in_timeout_table", sum(1 for w in waiters if w.timer is not None)),
        ("total_blocking_keys", len(blocked_keys)),
        ("total_blocking_keys_on_nokey", 0),
    ]


def stats_fields(core: CoreFigures) -> Fields:
    metrics = core.metrics
    dispatcher = core.dispatcher
    pubsub = core.pubsub
    denied = core.acl.denied
    return [
        ("total_connections_received", core.stats_connections),
        ("total_commands_processed", dispatcher.total_commands),
        ("instantaneous_ops_per_sec", round(metrics.rate("commands"))),
        ("total_net_input_bytes", core.stats_net_input),
        ("total_net_output_bytes", core.stats_net_output),
        ("total_net_repl_input_bytes", 0),
        ("total_net_repl_output_bytes", 0),
        ("instantaneous_input_kbps", f"{metrics.rate('net_input') / 1024:.2f}"),
        ("instantaneous_output_kbps", f"{metrics.rate('net_output') / 1024:.2f}"),
        ("instantaneous_input_repl_kbps", "0.00"),
        ("instantaneous_output_repl_kbps", "0.00"),
        ("rejected_connections", core.stats_rejected_connections),
        *core.sync_stats(),
        *core.expiry_stats(),
        ("evicted_keys", 0),
        ("evicted_clients", 0),
        ("total_eviction_exceeded_time", 0),
        ("current_eviction_exceeded_time", 0),
        ("keyspace_hits", core.stats_keyspace_hits),
        ("keyspace_misses", core.stats_keyspace_misses),
        ("pubsub_channels", pubsub.channel_count()),
        ("pubsub_patterns", pubsub.pattern_count()),
        ("pubsubshard_channels", pubsub.shard_channel_count()),
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
        ("client_query_buffer_limit_disconnections", core.stats_query_limit_disconnections),
        ("client_output_buffer_limit_disconnections", core.stats_output_limit_disconnections),
        ("reply_buffer_shrinks", 0),
        ("reply_buffer_expands", 0),
        ("eventloop_cycles", 0),
        ("eventloop_duration_sum", 0),
        ("eventloop_duration_cmd_sum", 0),
        ("instantaneous_eventloop_cycles_per_sec", 0),
        ("instantaneous_eventloop_duration_usec", 0),
        ("acl_access_denied_auth", denied[DENIED_AUTH]),
        ("acl_access_denied_cmd", denied[DENIED_CMD]),
        ("acl_access_denied_key", denied[DENIED_KEY]),
        ("acl_access_denied_channel", denied[DENIED_CHANNEL]),
    ]


def cpu_fields() -> Fields:
    me = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    thread = resource.getrusage(getattr(resource, "RUSAGE_THREAD", resource.RUSAGE_SELF))
    return [
        ("used_cpu_sys", f"{me.ru_stime:.6f}"),
        ("used_cpu_user", f"{me.ru_utime:.6f}"),
        ("used_cpu_sys_children", f"{children.ru_stime:.6f}"),
        ("used_cpu_user_children", f"{children.ru_utime:.6f}"),
        ("used_cpu_sys_main_thread", f"{thread.ru_stime:.6f}"),
        ("used_cpu_user_main_thread", f"{thread.ru_utime:.6f}"),
    ]


def _float32(value: float) -> float:
    # Redis divides as C floats before printing usec_per_call.
    return float(struct.unpack("f", struct.pack("f", value))[0])


def commandstats_fields(core: CoreFigures) -> Fields:
    lines: Fields = []
    for name, st in core.dispatcher.stats.items():
        if st.calls or st.failed or st.rejected:
            per_call = _float32(st.nsec / 1000 / st.calls) if st.calls else 0.0
            lines.append((
                f"cmdstat_{name}",
                f"calls={st.calls},usec={st.usec},usec_per_call={per_call:.2f},"
                f"rejected_calls={st.rejected},failed_calls={st.failed}",
            ))
    return lines


def errorstats_fields(core: CoreFigures) -> Fields:
    return [(f"errorstat_{code}", f"count={n}") for code, n in sorted(core.dispatcher.errors.items())]
